"""The table scripts/bench prints (and keeps as summary.txt), and its exit status."""
from __future__ import annotations

from . import rows, targets
from .results import Memory, ResultsDir, RowResult, whole

_ROW = "{:<18} {:>10} {:>9} {:>9} {:>8} {:>8} {:>8}  {}"
_TARGET = "{:<44} {:>16} {:>10} {:>5}"


def _cell(value) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if isinstance(value, float) else str(value)


def _host(results: ResultsDir) -> str:
    settings = results.settings
    nginx = settings.get("NGINX_VERSION").removeprefix("nginx version: ")
    haproxy = settings.get("HAPROXY_VERSION").split()
    wrk = settings.get("WRK_VERSION").split()
    h2load = "" if settings.flag("SKIP_H2") else f"; {settings.get('H2LOAD_VERSION')}"
    return (f"host: {settings.get('NPROC')} cores, {settings.get('KERNEL')}; {nginx}; "
            f"HAProxy {haproxy[2] if len(haproxy) > 2 else ''}; wrk {wrk[1] if len(wrk) > 1 else ''}{h2load}")


class Report:
    def __init__(self, results: ResultsDir):
        self.results = results
        self.settings = results.settings
        self.table_rows = rows.table_rows(self.settings)
        self.rows: dict[str, RowResult] = {row: results.row(row) for row in self.table_rows}
        self.memory: Memory = results.memory()

    def quantities(self) -> dict[str, int | float | None]:
        """ROW.QUANTITY for the targets: each row's median round, the memory and the cold row."""
        values: dict[str, int | float | None] = {}
        for row, result in self.rows.items():
            median = result.median
            cpu = median.cpu_us if median else None
            user = median.user_us if median else None
            values[f"{row}.rps"] = median.requests_per_second if median else None
            values[f"{row}.p50"] = median.p50_us if median else None
            values[f"{row}.p99"] = median.p99_us if median else None
            values[f"{row}.cpu"] = cpu
            values[f"{row}.usr"] = user
            values[f"{row}.sys"] = None if cpu is None or user is None else round(cpu - user, 1)
        values["memory.idle_mb"] = self.memory.idle_mb
        values["memory.beyond_token"] = self.memory.beyond_token
        cold = self.rows["cold"].median
        values["cold.ms"] = cold.walk_ms if cold else None
        values["cold.ideal_ms"] = self.cold_ideal_ms()
        values["cold.floor_ms"] = None
        if cold and cold.cpu_us is not None and cold.provider_cpu_us is not None:
            entities = self.settings.integer("COLD_ENTITIES") or 0
            cores = self.settings.integer("NPROC") or 1
            values["cold.floor_ms"] = whole((cold.cpu_us + cold.provider_cpu_us) * entities / cores / 1000)
        return values

    def cold_ideal_ms(self) -> int | None:
        """COLD_ENTITIES x the provider's delay / its concurrency: every fetch in flight at once."""
        concurrency = self.settings.number("PROVIDER_CONCURRENCY")
        entities = self.settings.number("COLD_ENTITIES")
        delay = self.settings.number("PROVIDER_DELAY_MS")
        if not concurrency or entities is None or delay is None:
            return None
        return whole(entities * delay / concurrency)

    def lines(self) -> list[str]:
        s = self.settings
        out = [
            f"fleet-token-proxy bench, {s.get('FINISHED')}",
            _host(self.results),
            f"load average before the runs: {s.get('LOAD_BEFORE')}; after: {s.get('LOAD_AFTER')}",
            f"commit: {s.get('COMMIT')}; median of {s.get('RUNS')} round(s)",
            s.credential_line(),
            f"HTTP/1.1: wrk -t{s.get('THREADS')} -c{s.get('CONNECTIONS')} -d{s.get('DURATION')} --latency, "
            f"GET {s.get('REQUEST_PATH')} (the -c1 rows: -c1)",
        ]
        if not s.flag("SKIP_H2"):
            out.append(f"gRPC (h2c): h2load -t1 -c{s.get('H2_CLIENTS')} -m{s.get('H2_STREAMS')} -D {s.get('DURATION')}, "
                       f"POST {s.get('GRPC_PATH')}")
        out.append("")
        out.append(_ROW.format("row", "req/s", "p50 us", "p99 us", "cpu us", "usr us", "failed", "status"))
        for row in self.table_rows:
            out.append(self._row_line(row))
        out.append(self._memory_line())
        out.append("")
        out.extend(self._target_lines())
        note = s.get("SIDECAR_NOTE")
        if note:
            out.append(f"note: {note}")
        return out

    def _row_line(self, row: str) -> str:
        result = self.rows[row]
        median = result.median
        label = rows.label(row, self.settings)
        if row == "cold":
            status = result.status
            if median is not None:
                status += (f" ({self.settings.get('COLD_ENTITIES')} new vehicles in {median.walk_ms} ms; "
                           f"CPU a call: provider {_cell(median.provider_cpu_us)} us)")
            return _ROW.format(label, _cell(median and median.requests_per_second), "-", "-",
                               _cell(median and median.cpu_us), "-", _cell(result.failed), status)
        return _ROW.format(label, _cell(median and median.requests_per_second), _cell(median and median.p50_us),
                           _cell(median and median.p99_us), _cell(median and median.cpu_us),
                           _cell(median and median.user_us), _cell(result.failed), result.status)

    def _memory_line(self) -> str:
        memory = self.memory
        if memory.idle_kb is None:
            return f"{'memory':<18} {memory.status}"
        text = f"{'memory':<18} {memory.status}: idle RSS {memory.idle_mb:.1f} MB"
        if memory.idle_parts is not None:
            text += f" (anonymous {memory.idle_parts.anon_mb:.1f}, file-backed {memory.idle_parts.file_mb:.1f})"
        if memory.entity_bytes is not None:
            text += (f"; {self.settings.get('MEMORY_ENTITIES')} entities: {memory.entity_bytes} B each, "
                     f"of which the token {memory.token_bytes} B")
        return text

    def target_lines(self) -> list[dict]:
        return [line for line in targets.load()
                if targets.applies(line, rest_h2=self.settings.flag("REST_H2"), h2=not self.settings.flag("SKIP_H2"))]

    def verdicts(self) -> list[targets.Verdict]:
        lines = self.target_lines()
        ideal = self.cold_ideal_ms()
        names = {"ENTITIES": self.settings.get("ENTITIES"), "cold_ideal": f" ({ideal} ms)" if ideal is not None else ""}
        quantities = self.quantities()
        return [targets.evaluate(line, quantities, names) for line in lines]

    def _target_lines(self) -> list[str]:
        issues = ", ".join(str(issue) for issue in targets.issues(self.target_lines()))
        out = [_TARGET.format(f"issue {issues} target", "now", "target", "met")]
        out.extend(_TARGET.format(v.label, v.now, v.target, v.met) for v in self.verdicts())
        return out

    def failures(self) -> list[str]:
        """Why the run failed: an anchor row not ok, or a sidecar row (or the memory measure)
        that was neither ok nor skipped. A target not met is not a failure."""
        failures = [f"{row}: {self.rows[row].status}" for row in rows.anchor_rows(self.settings)
                    if row in self.rows and self.rows[row].status != "ok"]
        for row in rows.SIDECAR_ROWS:
            if row in self.rows and not _passes(self.rows[row].status):
                failures.append(f"{row}: {self.rows[row].status}")
        if not _passes(self.memory.status):
            failures.append(f"memory: {self.memory.status}")
        return failures


def _passes(status: str) -> bool:
    return status == "ok" or status.startswith("skipped") or status.startswith("no binary")
