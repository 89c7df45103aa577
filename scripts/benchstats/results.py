"""A results directory read back into the table's rows.

scripts/bench leaves, beside the clients' raw output:
  settings.env   the run's settings (NAME=value)
  status.tsv     ROW<TAB>why, for a row that was skipped or whose server did not start, and for
                 `memory`; the last line for a row wins
  runs.tsv       ROW<TAB>RUN<TAB>outcome of each measured run: `ok`, `client-failed` (wrk or
                 h2load exited non-zero), `server-exited`, `walk-unfinished` (the cold row)
and for each run of a row, named after both: wrk-ROW-RUN.txt or h2load-ROW-RUN.txt with
h2load-ROW-RUN.log.gz (its --log-file), stat-ROW-RUN-before.txt and -after.txt (the serving
process's /proc/PID/stat around the run); the cold row's walk-cold-RUN.txt,
metrics-cold-RUN-before.txt and -after.txt, stat-cold-provider-RUN-*.txt. The many-entity rows'
metrics-many-before.txt and -after.txt bracket the rounds; the memory measure has memory-*.status
(/proc/PID/status), walk-memory.txt, memory-metrics.txt and memory-token.json.
"""
from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

from . import h2load, procfs, prometheus, rows, wrk
from .order_statistics import median_round
from .settings import Settings

PROVIDER_FETCHES = 'fleet_token_proxy_provider_requests_total{outcome="success"}'
CACHE_MISSES = "fleet_token_proxy_token_cache_misses_total"
CACHED_ENTITIES = "fleet_token_proxy_cached_entities"


def whole(value: float) -> int:
    """A number rounded to an integer as printf's %.0f rounds it."""
    return int(f"{value:.0f}")


@dataclass(frozen=True)
class Round:
    """One measured run of a row."""

    run: int
    requests_per_second: int
    p50_us: int | None
    p99_us: int | None
    failed: int
    cpu_us: float | None  # CPU (user + system) of the row's server per call
    user_us: float | None
    walk_ms: int | None = None  # the cold row: first request to last answer
    provider_cpu_us: float | None = None  # the cold row: the provider's CPU per call


@dataclass
class RoundOutcome:
    round: Round | None = None
    status: str | None = None  # why the run failed, or what went wrong in it
    unanswered: int = 0  # requests of a run in which nothing was answered
    notes: list[str] = field(default_factory=list)


@dataclass
class RowResult:
    row: str
    status: str
    median: Round | None = None
    failed: int | None = None  # over all runs; None when nothing was measured
    rounds: list[Round] = field(default_factory=list)


@dataclass
class Memory:
    status: str
    idle_kb: int | None = None
    # The idle resident set's anonymous and file-backed parts.
    idle_parts: procfs.ResidentParts | None = None
    entity_bytes: int | None = None
    token_bytes: int | None = None

    @property
    def beyond_token(self) -> int | None:
        if self.entity_bytes is None or self.token_bytes is None:
            return None
        return self.entity_bytes - self.token_bytes

    @property
    def idle_mb(self) -> float | None:
        return None if self.idle_kb is None else round(self.idle_kb / 1024, 1)


class ResultsDir:
    def __init__(self, path: Path):
        self.path = path
        self.settings = Settings.read(path / "settings.env")
        self.statuses: dict[str, str] = {}
        for line in self._lines("status.tsv"):
            row, _, why = line.partition("\t")
            self.statuses[row] = why
        self.runs: list[tuple[str, int, str]] = []
        for line in self._lines("runs.tsv"):
            row, run, outcome = line.split("\t")
            self.runs.append((row, int(run), outcome))
        self.notes: list[str] = []  # what the script logged as it went, for stderr

    def _lines(self, name: str) -> list[str]:
        text = self.text(name)
        return [line for line in (text or "").splitlines() if line]

    def text(self, name: str) -> str | None:
        try:
            return (self.path / name).read_text(errors="replace")
        except FileNotFoundError:
            return None

    def ticks(self, name: str) -> procfs.CPUTicks | None:
        text = self.text(name)
        return None if text is None else procfs.cpu_ticks(text)

    def cpu_per_call(self, prefix: str, calls: int | None) -> tuple[float | None, float | None]:
        """(CPU, user CPU) per call from stat-PREFIX-before.txt and -after.txt."""
        before, after = self.ticks(f"stat-{prefix}-before.txt"), self.ticks(f"stat-{prefix}-after.txt")
        if before is None or after is None:
            return None, None
        hz = self.settings.integer("CLK_TCK") or 100
        return (procfs.cpu_us_per_call(before.total, after.total, calls, hz),
                procfs.cpu_us_per_call(before.user, after.user, calls, hz))

    def metric(self, name: str, sample: str) -> float | None:
        text = self.text(name)
        return None if text is None else prometheus.sample(text, sample)

    # --- one run ---------------------------------------------------------------------------

    def _common_failure(self, outcome: str, tool: str, output: str | None) -> str | None:
        if outcome == "client-failed":
            lines = [line for line in (output or "").splitlines() if line.strip()]
            return f"{tool} failed: {lines[-1] if lines else ''}"
        if outcome == "server-exited":
            return f"the server exited during the run (its log is in {self.path})"
        return None

    def wrk_round(self, row: str, run: int, outcome: str) -> RoundOutcome:
        output = self.text(f"wrk-{row}-{run}.txt")
        failure = self._common_failure(outcome, "wrk", output)
        if failure:
            return RoundOutcome(status=failure)
        report = wrk.parse_report(output or "")
        if report.requests_per_second is None or report.p50_us is None or report.p99_us is None:
            return RoundOutcome(status="could not read wrk's output")
        cpu, user = self.cpu_per_call(f"{row}-{run}", report.calls)
        return RoundOutcome(round=Round(run, report.requests_per_second, report.p50_us, report.p99_us,
                                        report.failed, cpu, user))

    def request_log(self, row: str, run: int) -> h2load.RequestLog:
        try:
            with gzip.open(self.path / f"h2load-{row}-{run}.log.gz", "rt") as lines:
                return h2load.read_request_log(lines)
        except FileNotFoundError:
            return h2load.read_request_log([])

    def h2load_round(self, row: str, run: int, outcome: str) -> RoundOutcome:
        output = self.text(f"h2load-{row}-{run}.txt")
        failure = self._common_failure(outcome, "h2load", output)
        if failure:
            return RoundOutcome(status=failure)
        result = RoundOutcome()
        report = h2load.parse_report(output or "")
        failed = report.failed
        if row.startswith("g"):
            short = h2load.answers_without_message(report, self.settings.integer("GRPC_ANSWER_BYTES") or 1)
            if short:
                failed += short
                result.notes.append(f"{row}: {short} answers of run {run} without the gRPC message")
        log = self.request_log(row, run)
        stalled = None
        quiet = h2load.stalled(log, report)
        if quiet is not None:
            unanswered = report.started - report.done
            failed += unanswered
            stalled = f"stalled: no answer in the last {quiet:.1f}s of run {run}, {unanswered} requests unanswered"
            result.notes.append(f"{row}: {stalled}")
        p50, p99 = log.percentile_us(50), log.percentile_us(99)
        if p50 is None and report.elapsed_s is not None:
            result.unanswered = report.started
            result.status = f"no request answered in run {run} ({report.started} sent)"
            result.notes.append(f"{row}: {result.status}")
            return result
        if report.requests_per_second is None or p50 is None or p99 is None:
            result.status = "could not read h2load's output (no request completed?)"
            return result
        cpu, user = self.cpu_per_call(f"{row}-{run}", report.done)
        result.round = Round(run, report.requests_per_second, p50, p99, failed, cpu, user)
        # After the numbers, so that the row still reports them, with the reason beside them.
        result.status = stalled
        return result

    def cold_round(self, row: str, run: int, outcome: str) -> RoundOutcome:
        walk = wrk.parse_walk(self.text(f"walk-cold-{run}.txt") or "")
        if outcome == "walk-unfinished" or walk is None:
            return RoundOutcome(status=f"the walk of run {run} did not finish")
        entities = self.settings.integer("COLD_ENTITIES") or 0
        before = self.metric(f"metrics-cold-{run}-before.txt", PROVIDER_FETCHES)
        after = self.metric(f"metrics-cold-{run}-after.txt", PROVIDER_FETCHES)
        fetches = None if before is None or after is None else int(after - before)
        if fetches != entities:
            return RoundOutcome(status=f"run {run}: {fetches} provider fetches, want {entities}")
        cpu, _ = self.cpu_per_call(f"cold-{run}", entities)
        provider_cpu, _ = self.cpu_per_call(f"cold-provider-{run}", entities)
        seconds = walk.duration_us / 1_000_000
        return RoundOutcome(round=Round(run, whole(entities / seconds) if seconds else 0, None, None, walk.failed,
                                        cpu, None, walk_ms=whole(walk.duration_us / 1000), provider_cpu_us=provider_cpu))

    # --- rows --------------------------------------------------------------------------------

    def row(self, row: str) -> RowResult:
        measure = {"wrk": self.wrk_round, "h2load": self.h2load_round, "walk": self.cold_round}[rows.kind(row)]
        runs = [(run, outcome) for name, run, outcome in self.runs if name == row]
        status = self.statuses.get(row, "not run")
        if not runs:
            return RowResult(row, status)
        result = RowResult(row, status)
        run_status = None
        unanswered = 0
        for run, outcome in runs:
            measured = measure(row, run, outcome)
            self.notes.extend(measured.notes)
            unanswered += measured.unanswered
            if measured.status is not None:
                run_status = measured.status
            if measured.round is not None:
                result.rounds.append(measured.round)
        result.median = median_round(result.rounds, key=lambda r: r.requests_per_second)
        if result.rounds:
            result.failed = sum(r.failed for r in result.rounds) + unanswered
        elif unanswered:
            result.failed = unanswered
        if result.failed:
            self.notes.append(f"{row}: {result.failed} requests failed (see {self.path})")
        result.status = run_status or ("ok" if result.rounds else status)
        if row in ("many", "many1"):
            misses = self.misses_during_rounds()
            if misses:
                result.status = f"{misses} cache misses during the rounds"
        return result

    def misses_during_rounds(self) -> int | None:
        """The many-entity sidecar's cache misses between the warm-up and the end of the rounds."""
        before = self.metric("metrics-many-before.txt", CACHE_MISSES)
        after = self.metric("metrics-many-after.txt", CACHE_MISSES)
        return None if before is None or after is None else int(after - before)

    def memory(self) -> Memory:
        if "memory" in self.statuses:
            return Memory(self.statuses["memory"])
        idle = self.text("memory-idle.status")
        if idle is None:
            return Memory("not run")
        memory = Memory("ok", idle_kb=procfs.rss_kb(idle), idle_parts=procfs.resident_parts(idle))
        entities = self.settings.integer("MEMORY_ENTITIES") or 0
        walk = wrk.parse_walk(self.text("walk-memory.txt") or "")
        if walk is None:
            memory.status = f"the walk over {entities} vehicles did not finish"
            return memory
        if walk.failed:
            memory.status = f"{walk.failed} calls of the walk failed"
            return memory
        cached = self.metric("memory-metrics.txt", CACHED_ENTITIES)
        if cached is None or int(cached) != entities + 1:
            memory.status = f"{None if cached is None else int(cached)} cached entities after the walk, want {entities + 1}"
            return memory
        token = token_of(self.text("memory-token.json") or "")
        before = procfs.rss_kb(self.text("memory-before.status") or "")
        after = procfs.rss_kb(self.text("memory-after.status") or "")
        if not token:
            memory.status = "could not read a token from the stand-in provider"
            return memory
        if before is None or after is None or not entities:
            memory.status = "could not read the memory sidecar's VmRSS"
            return memory
        memory.entity_bytes = int((after - before) * 1024 / entities)
        memory.token_bytes = len(token)
        self.notes.append(f"memory: idle {memory.idle_kb} kB; {before} kB before the walk, {after} kB after "
                          f"({walk.duration_us // 1000} ms)")
        return memory


def token_of(answer: str) -> str:
    """The token of a stand-in provider's answer ({"token": ..., ...}); empty when there is none."""
    try:
        token = json.loads(answer).get("token")
    except (ValueError, AttributeError):
        return ""
    return token if isinstance(token, str) else ""
