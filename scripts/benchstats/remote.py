"""The remote mode's results (scripts/bench remote): a TLS upstream behind a delay relay, and the
proxies in front of it, read back into the table of issue 17.

Beside what ResultsDir reads (the rNAME and grNAME rows' wrk and h2load runs), the mode leaves:
  phases.tsv             KIND<TAB>PROXY<TAB>RUN<TAB>START<TAB>END (unix times): each round's REST
                         phase (a wrk -c1 second, then the c=64 run) and gRPC phase
  relay-PROXY.log        the proxy's relay: an `accept UNIX_TIME` line per upstream connection
  stat-relay-PROXY-RUN-before.txt, -after.txt   the relay's /proc/PID/stat around a REST phase
  upstream-access.log    the TLS upstream's access log, `bench_tls` format: msec, connection,
                         connection_requests, ssl_session_reused (`r` or `.`), status
  idle-rest-PROXY-S.txt  curl's `STATUS SECONDS` line of the one REST call made on a new client
                         connection after S seconds idle
  idle-grpc-PROXY-S.txt  h2load's summary, and .log its request log, of the gRPC call made after
                         S seconds more
  cold-PROXY.txt         curl's lines of COLD_CALLS concurrent REST calls 1 s after start-up
"""
from __future__ import annotations

from dataclasses import dataclass

from . import h2load, relay, targets
from .order_statistics import median_round
from .results import ResultsDir, RowResult, whole

# The table's columns, in order, with their headings.
PROXIES = ["direct", "nginx", "haproxy1", "haproxy2", "sidecar"]
HEADINGS = {"direct": "direct", "nginx": "nginx", "haproxy1": "haproxy h1", "haproxy2": "haproxy h2",
            "sidecar": "sidecar"}
_TARGET = "{:<58} {:>18} {:>10} {:>5}"
GRPC_PROXIES = ["direct", "nginx", "haproxy2", "sidecar"]
IDLE_PROXIES = {"rest": ["nginx", "haproxy1", "haproxy2", "sidecar"], "grpc": ["nginx", "haproxy2", "sidecar"]}
ANCHORS = ["direct", "nginx", "haproxy1", "haproxy2"]
PROXY_COLUMNS = ["nginx", "haproxy1", "haproxy2"]  # the proxies the sidecar is compared with


@dataclass(frozen=True)
class Phase:
    kind: str  # rest or grpc
    proxy: str
    run: int
    start: float
    end: float


def read_phases(text: str) -> list[Phase]:
    phases = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) != 5:
            continue
        kind, proxy, run, start, end = fields
        phases.append(Phase(kind, proxy, int(run), float(start), float(end)))
    return phases


@dataclass(frozen=True)
class Handshakes:
    full: int
    resumed: int


def handshakes(access_log: str, windows: list[tuple[float, float]]) -> Handshakes:
    """TLS handshakes of the connections whose first request the upstream answered in one of the
    windows, from its `bench_tls` access log: full (ssl_session_reused `.`) and resumed (`r`)."""
    full = resumed = 0
    for line in access_log.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[2] != "1":
            continue
        try:
            when = float(fields[0])
        except ValueError:
            continue
        if not any(start <= when < end for start, end in windows):
            continue
        if fields[3] == "r":
            resumed += 1
        else:
            full += 1
    return Handshakes(full, resumed)


def curl_calls(text: str) -> list[tuple[int, float]]:
    """curl -w '%{http_code} %{time_total}\\n': a (status, seconds) a call; 0 for no answer."""
    calls = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 2:
            continue
        try:
            calls.append((int(fields[0]), float(fields[1])))
        except ValueError:
            continue
    return calls


def first_rest_call_ms(text: str) -> float | None:
    """The time of the one REST call made after an idle wait, in ms to a tenth; None unless
    it was answered 200."""
    calls = curl_calls(text)
    if len(calls) != 1 or calls[0][0] != 200:
        return None
    return round(calls[0][1] * 1000, 1)


def first_grpc_call_ms(summary: str, request_log: str) -> float | None:
    """The time of the one gRPC call made after an idle wait, in ms to a tenth, from h2load's
    request log; None unless h2load's summary shows it succeeded."""
    report = h2load.parse_report(summary)
    if report.succeeded != 1:
        return None
    log = h2load.read_request_log(request_log.splitlines())
    if len(log.answer_times_us) != 1:
        return None
    return round(log.answer_times_us[0] / 1000, 1)


def cold_ms(text: str, count: int) -> tuple[float | None, str]:
    """The time to the last answer of COUNT calls started at once, in ms to a tenth, and why it
    is missing: every call must have been answered 200."""
    calls = curl_calls(text)
    answered = sum(1 for status, _ in calls if status == 200)
    if not count or answered != count:
        return None, f"{answered} of {count} calls answered 200"
    return round(max(seconds for _, seconds in calls) * 1000, 1), "ok"


class RemoteReport:
    def __init__(self, results: ResultsDir):
        self.results = results
        self.settings = results.settings
        self.phases = read_phases(results.text("phases.tsv") or "")
        self.rest = {proxy: results.row(f"r{proxy}") for proxy in PROXIES}
        self.grpc = {proxy: results.row(f"gr{proxy}") for proxy in GRPC_PROXIES}
        self.idle_seconds = [int(s) for s in self.settings.get("IDLE_S").split() if s.isdigit()]
        self.rtt_ms = self.settings.number("RTT_MS")

    def windows(self, proxy: str, kind: str = "rest") -> list[tuple[float, float]]:
        return [(p.start, p.end) for p in self.phases if p.proxy == proxy and p.kind == kind]

    def connections_per_round(self, proxy: str, kind: str = "rest") -> int | None:
        """Upstream connections the proxy's relay (nginx's gRPC twin's for nginx's gRPC phase)
        accepted in a round's phase of KIND, the median round's."""
        relay_name = "ngrpc" if (proxy, kind) == ("nginx", "grpc") else proxy
        log = self.results.text(f"relay-{relay_name}.log")
        windows = self.windows(proxy, kind)
        if log is None or not windows:
            return None
        counts = [relay.accepts(log, start, end) for start, end in windows]
        return median_round(counts, key=lambda count: count)

    def relay_busy_percent(self, proxy: str) -> int | None:
        """The most of one core the proxy's relay used in a round's REST phase: near 100, the
        relay, not the path, set the pace."""
        hz = self.settings.integer("CLK_TCK") or 100
        busiest = None
        for phase in self.phases:
            if phase.proxy != proxy or phase.kind != "rest":
                continue
            before = self.results.ticks(f"stat-relay-{proxy}-{phase.run}-before.txt")
            after = self.results.ticks(f"stat-relay-{proxy}-{phase.run}-after.txt")
            if before is None or after is None or phase.end <= phase.start:
                continue
            percent = whole((after.total - before.total) / hz / (phase.end - phase.start) * 100)
            busiest = percent if busiest is None else max(busiest, percent)
        return busiest

    def handshakes(self, proxy: str) -> Handshakes | None:
        log = self.results.text("upstream-access.log")
        windows = self.windows(proxy)
        return None if log is None or not windows else handshakes(log, windows)

    def first_call(self, kind: str, proxy: str, seconds: int) -> float | None:
        name = f"idle-{kind}-{proxy}-{seconds}"
        summary = self.results.text(f"{name}.txt")
        if kind == "rest":
            return None if summary is None else first_rest_call_ms(summary)
        request_log = self.results.text(f"{name}.log")
        if summary is None or request_log is None:
            return None
        return first_grpc_call_ms(summary, request_log)

    def cold(self, proxy: str) -> tuple[float | None, str]:
        summary = self.results.text(f"cold-{proxy}.txt")
        if summary is None:
            return None, "not run"
        return cold_ms(summary, self.settings.integer("COLD_CALLS") or 0)

    @staticmethod
    def cpu_us_over_rounds(row: RowResult) -> float | None:
        """CPU per call (us) over every round: each round's weighted by its calls (its req/s:
        the rounds last alike). Not the median round's: that round is the median by req/s,
        which at the round trip's bound says nothing of CPU, and one 10 s round's CPU moves by
        ±20% with what else the host runs, as much as the differences it should show."""
        rounds = [r for r in row.rounds if r.cpu_us is not None and r.requests_per_second > 0]
        if not rounds:
            return None
        calls = sum(r.requests_per_second for r in rounds)
        return round(sum(r.cpu_us * r.requests_per_second for r in rounds) / calls, 1)

    @classmethod
    def cpu_s_per_1000(cls, row: RowResult) -> float | None:
        """Seconds of CPU per 1,000 calls over every round (`cpu_us_over_rounds`)."""
        cpu_us = cls.cpu_us_over_rounds(row)
        return None if cpu_us is None else round(cpu_us / 1000, 3)

    # --- the quantities the targets read (targets.json, `when: remote`) --------------------

    def quantities(self) -> dict[str, float | int | None]:
        values: dict[str, float | int | None] = {"remote.rtt_us": None if self.rtt_ms is None else whole(self.rtt_ms * 1000),
                                                  "remote.rtt_ms": self.rtt_ms,
                                                  "remote.two_rtt_ms": None if self.rtt_ms is None else 2 * self.rtt_ms}
        for proxy in PROXIES:
            median = self.rest[proxy].median
            values[f"{proxy}.rps"] = median.requests_per_second if median else None
            values[f"{proxy}.p50"] = median.p50_us if median else None
            values[f"{proxy}.p99"] = median.p99_us if median else None
            values[f"{proxy}.cpu"] = self.cpu_us_over_rounds(self.rest[proxy])
            values[f"{proxy}.connections"] = self.connections_per_round(proxy)
            tls = self.handshakes(proxy)
            values[f"{proxy}.tls_full"] = tls.full if tls else None
            values[f"{proxy}.cold_ms"] = self.cold(proxy)[0]
        for proxy in GRPC_PROXIES:
            median = self.grpc[proxy].median
            values[f"{proxy}.grpc_rps"] = median.requests_per_second if median else None
        values["best.rps"] = _best(max, [values[f"{p}.rps"] for p in PROXY_COLUMNS])
        values["best.p99"] = _best(min, [values[f"{p}.p99"] for p in PROXY_COLUMNS])
        values["best.cpu"] = _best(min, [values[f"{p}.cpu"] for p in PROXY_COLUMNS])
        idle = [self.first_call(kind, "sidecar", s) for kind in IDLE_PROXIES for s in self.idle_seconds]
        values["sidecar.idle_worst_ms"] = None if not idle or None in idle else max(idle)
        return values

    # --- the table ----------------------------------------------------------------------------

    def lines(self) -> list[str]:
        s = self.settings
        out = [
            f"fleet-token-proxy bench remote, {s.get('FINISHED')}",
            f"host: {s.get('NPROC')} cores, {s.get('KERNEL')}; {s.get('NGINX_VERSION').removeprefix('nginx version: ')}; "
            f"{' '.join(s.get('HAPROXY_VERSION').split()[:3])}; {s.get('H2LOAD_VERSION')}",
            f"load average before the runs: {s.get('LOAD_BEFORE')}; after: {s.get('LOAD_AFTER')}",
            f"commit: {s.get('COMMIT')}; median of {s.get('RUNS')} round(s); RTT {s.get('RTT_MS')} ms (the relay, "
            f"each way half); TLS 1.3 nginx upstream (HTTP/2, session tickets)",
            s.credential_line(),
            f"REST: wrk -t1 -c{s.get('CONNECTIONS')} -d{s.get('DURATION')}; gRPC: h2load -t1 -c{s.get('H2_CLIENTS')} "
            f"-m{s.get('H2_STREAMS')} -D {s.get('DURATION')}",
            "",
        ]
        out.append(_line("row", [HEADINGS[p] for p in PROXIES]))
        out.append(_line(f"REST c={s.get('CONNECTIONS')} req/s", [self._rest(p, lambda m: str(m.requests_per_second)) for p in PROXIES]))
        out.append(_line("REST p50 / p99 ms", [self._rest(p, lambda m: f"{m.p50_us / 1000:.1f} / {m.p99_us / 1000:.1f}") for p in PROXIES]))
        out.append(_line("upstream conns/round", [_cell(self.connections_per_round(p)) for p in PROXIES]))
        out.append(_line("upstream conns/round, gRPC",
                         [_cell(self.connections_per_round(p, "grpc")) if p in self.grpc else "—" for p in PROXIES]))
        out.append(_line("TLS full / resumed", [self._handshake_cell(p) for p in PROXIES]))
        out.append(_line(f"gRPC -c{s.get('H2_CLIENTS')} -m{s.get('H2_STREAMS')} req/s",
                         [self._grpc(p) for p in PROXIES]))
        for seconds in self.idle_seconds:
            for kind, label in (("rest", "REST"), ("grpc", "gRPC")):
                out.append(_line(f"first {label} after {seconds}s ms",
                                 [_cell(self.first_call(kind, p, seconds)) if p in IDLE_PROXIES[kind] else "—"
                                  for p in PROXIES]))
        out.append(_line(f"cold start, {s.get('COLD_CALLS')} calls ms", [_cell(self.cold(p)[0]) for p in PROXIES]))
        out.append(_line("CPU s/1000 REST, all rounds", [_cell(self.cpu_s_per_1000(self.rest[p]), 3) for p in PROXIES]))
        out.append(_line("relay CPU %, REST phase", [_cell(self.relay_busy_percent(p)) for p in PROXIES]))
        out.append("")
        out.extend(targets.closing_lines("issue 17 target", self.verdicts(), self.problems(), _TARGET))
        return out

    def verdicts(self) -> list[targets.Verdict]:
        quantities = self.quantities()
        return [targets.evaluate(line, quantities, {}) for line in targets.load()
                if targets.applies(line, rest_h2=False, h2=True, mode="remote")]

    def _rest(self, proxy: str, show) -> str:
        median = self.rest[proxy].median
        return show(median) if median else "-"

    def _grpc(self, proxy: str) -> str:
        if proxy not in self.grpc:
            return "—"
        median = self.grpc[proxy].median
        return str(median.requests_per_second) if median else "-"

    def _handshake_cell(self, proxy: str) -> str:
        tls = self.handshakes(proxy)
        return "-" if tls is None else f"{tls.full} / {tls.resumed}"

    def problems(self) -> list[str]:
        """What went wrong, row by row: a row not ok, failed calls, a cold start that failed."""
        out = []
        for row in list(self.rest.values()) + list(self.grpc.values()):
            if row.status != "ok" or row.failed:
                out.append(f"{row.row}: {row.status}" + (f", {row.failed} failed" if row.failed else ""))
        for proxy in PROXIES:
            value, why = self.cold(proxy)
            if value is None:
                out.append(f"cold {proxy}: {why}")
        return out

    def failures(self) -> list[str]:
        """An anchor's or the sidecar's row that is not ok fails the run; a target not met does not."""
        return [f"{row.row}: {row.status}" for row in list(self.rest.values()) + list(self.grpc.values())
                if row.status != "ok"]


def _best(pick, values):
    known = [value for value in values if value is not None]
    return pick(known) if known else None


def _cell(value, places: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value:.{places}f}" if isinstance(value, float) else str(value)


def _line(label: str, cells: list[str]) -> str:
    return f"{label:<28}" + "".join(f"{cell:>14}" for cell in cells)
