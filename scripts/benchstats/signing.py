"""The signing mode's results (scripts/bench signing): warm calls through a sidecar that signs
its own tokens (`--signer key-file:`, or with SIGNER=iam IAM's signJwt authorised by a federated
token), with every token cached, then while a walk makes it sign
SIGN_ENTITIES tokens for vehicles it has never seen: issue 18's "signing never stalls calls".

The mode leaves, beside settings.env (MODE=signing) and status.tsv (`signing<TAB>why` when the
servers did not start):
  walk-signing-warmup.txt      the walk that cached the WARM_ENTITIES warm vehicles' tokens
  h2load-cached-K.txt, .log.gz the warm load's K-th slice with every token cached: h2load's
                               summary and its per-request log (--log-file)
  h2load-signing-K.txt, .log.gz  the same load's slices while the cold walk ran
  walk-signing.txt             the cold walk (scripts/bench-entities.lua): its `walk:` line has
                               its first request's wall-clock time, so the warm calls of its
                               window are the ones started between that and its last answer
  metrics-signing-before.txt, -after.txt   the sidecar's /metrics around the cold walk
  stat-signing-before.txt, -after.txt      the sidecar's /proc/PID/stat around the cold walk
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path

from . import h2load, prometheus, targets, wrk
from .order_statistics import nearest_rank
from .results import CACHE_MISSES, ResultsDir, whole

_TARGET = "{:<58} {:>10} {:>10} {:>5}"
# What signs, by SIGNER (results before issue 26 have none: key-file).
_SIGNERS = {
    "key-file": "--signer key-file:",
    "iam": "--signer iam: (stand-in google's signJwt, authorised by a federated token: OIDC file, STS, generateAccessToken; no key)",
}


@dataclass(frozen=True)
class WarmCalls:
    """The warm calls of one phase: the answered ones' times, and the calls that failed (a
    status other than 200, or a stream that failed)."""

    answer_times_us: list[int]  # ascending
    failed: int

    @property
    def calls(self) -> int:
        return len(self.answer_times_us) + self.failed

    def percentile_us(self, percent: int) -> int | None:
        return nearest_rank(self.answer_times_us, percent)


def warm_calls(requests: list[h2load.LoggedRequest], window: tuple[int, int] | None = None) -> WarmCalls:
    """The calls of h2load request logs, only those started inside WINDOW (us since the epoch,
    both ends included) when it is given."""
    times = []
    failed = 0
    for request in requests:
        if window is not None and not window[0] <= request.start_us <= window[1]:
            continue
        if request.status == 200:
            times.append(request.duration_us)
        else:
            failed += 1
    times.sort()
    return WarmCalls(times, failed)


def walk_window(walk: wrk.Walk) -> tuple[int, int] | None:
    """The walk's first request to its last answer, us since the epoch; None for a walk line
    without its start."""
    if walk.started_us is None:
        return None
    return walk.started_us, walk.started_us + walk.duration_us


class SigningReport:
    def __init__(self, results: ResultsDir):
        self.results = results
        self.settings = results.settings
        self.entities = self.settings.integer("SIGN_ENTITIES") or 0
        self.walk = wrk.parse_walk(results.text("walk-signing.txt") or "")
        self.window = None if self.walk is None else walk_window(self.walk)
        self.cached = warm_calls(self._requests("cached"))
        self.signing = warm_calls(self._requests("signing"), self.window) if self.window else None

    def _requests(self, phase: str) -> list[h2load.LoggedRequest]:
        """Every slice's logged requests, in slice order."""
        requests: list[h2load.LoggedRequest] = []
        for log in sorted(self.results.path.glob(f"h2load-{phase}-*.log.gz"), key=_slice_number):
            with gzip.open(log, "rt", errors="replace") as lines:
                requests.extend(h2load.logged_requests(lines))
        return requests

    def signed(self) -> int | None:
        """Tokens the sidecar had to make during the walk: its cache misses then."""
        before, after = self.results.text("metrics-signing-before.txt"), self.results.text("metrics-signing-after.txt")
        if before is None or after is None:
            return None
        return int(prometheus.sample(after, CACHE_MISSES) - prometheus.sample(before, CACHE_MISSES))

    def sidecar_cpu_s(self) -> float | None:
        before, after = self.results.ticks("stat-signing-before.txt"), self.results.ticks("stat-signing-after.txt")
        if before is None or after is None:
            return None
        hz = self.settings.integer("CLK_TCK") or 100
        return round((after.total - before.total) / hz, 2)

    # --- the quantities the targets read (targets.json, `when: signing`) --------------------

    def quantities(self) -> dict[str, float | int | None]:
        values: dict[str, float | int | None] = {}
        for name, calls in (("cached", self.cached), ("signing", self.signing)):
            values[f"{name}.p50"] = None if calls is None else calls.percentile_us(50)
            values[f"{name}.p99"] = None if calls is None else calls.percentile_us(99)
            values[f"{name}.calls"] = None if calls is None else calls.calls
            values[f"{name}.failed"] = None if calls is None else calls.failed
        walk = self.walk
        values["walk.ms"] = None if walk is None else whole(walk.duration_us / 1000)
        values["walk.rate"] = None if walk is None or not walk.duration_us else whole(self.entities / (walk.duration_us / 1_000_000))
        return values

    def verdicts(self) -> list[targets.Verdict]:
        quantities = self.quantities()
        names = {"SIGN_ENTITIES": str(self.entities)}
        return [targets.evaluate(line, quantities, names) for line in targets.load()
                if targets.applies(line, rest_h2=False, h2=True, mode="signing")]

    # --- the table ----------------------------------------------------------------------------

    def lines(self) -> list[str]:
        s = self.settings
        out = [
            f"fleet-token-proxy bench signing, {s.get('FINISHED')}",
            f"host: {s.get('NPROC')} cores, {s.get('KERNEL')}; {s.get('H2LOAD_VERSION')}; {' '.join(s.get('WRK_VERSION').split()[:2])}",
            f"load average before the runs: {s.get('LOAD_BEFORE')}; after: {s.get('LOAD_AFTER')}",
            f"commit: {s.get('COMMIT')}; serve {self._signer()} "
            "in front of stand-in fleet-engine --jwks (each token's RS256 signature verified)",
            f"warm: h2load --h1 -t1 -c{s.get('WARM_CLIENTS')} -m1 --rps {s.get('WARM_RPS')} (each client) over "
            f"{s.get('WARM_ENTITIES')} vehicles whose tokens are cached, in slices of {s.get('SLICE_S')} s",
            f"cold: a wrk walk over {self.entities} new vehicles, {s.get('SIGN_CONNECTIONS')} connections",
            "",
            f"{'warm calls':<40}{'calls':>8}{'failed':>8}{'p50 ms':>9}{'p99 ms':>9}",
            self._phase_line(f"every token cached, {s.get('CACHED_S')} s", self.cached),
            self._phase_line(f"while {self.entities} cold are signed", self.signing),
            "",
            self._walk_line(),
            "",
        ]
        out.extend(targets.closing_lines("issue 18 target", self.verdicts(), self.failures(), _TARGET))
        return out

    def _signer(self) -> str:
        signer = self.settings.get("SIGNER") or "key-file"
        text = _SIGNERS.get(signer, "--signer " + signer)
        if signer == "iam":
            text += f", --provider-concurrency {self.settings.get('IAM_CONCURRENCY') or 32}"
        return text

    @staticmethod
    def _phase_line(label: str, calls: WarmCalls | None) -> str:
        if calls is None or not calls.answer_times_us:
            return f"{label:<40}{'-':>8}{'-':>8}{'-':>9}{'-':>9}"
        return (f"{label:<40}{calls.calls:>8}{calls.failed:>8}{calls.percentile_us(50) / 1000:>9.2f}"
                f"{calls.percentile_us(99) / 1000:>9.2f}")

    def _walk_line(self) -> str:
        walk = self.walk
        if walk is None:
            return "cold walk: did not finish"
        values = self.quantities()
        signed, cpu = self.signed(), self.sidecar_cpu_s()
        line = (f"cold walk: {self.entities} vehicles in {values['walk.ms']} ms ({values['walk.rate']}/s), "
                f"{walk.failed} failed; {'-' if signed is None else signed} tokens signed (cache misses)")
        if cpu is not None and self.entities:
            line += f"; sidecar CPU {cpu:.2f} s, {cpu * 1000 / self.entities:.2f} ms a cold vehicle (warm calls included)"
        return line

    def failures(self) -> list[str]:
        """What makes the run fail: the servers not started, a walk that did not finish or did
        not sign each vehicle once, failed calls, a phase without warm calls. A target not met
        is not a failure."""
        out = [f"{row}: {why}" for row, why in self.results.statuses.items()]
        warmup = wrk.parse_walk(self.results.text("walk-signing-warmup.txt") or "")
        if warmup is None or warmup.failed:
            out.append("the warm vehicles' walk did not finish" if warmup is None
                       else f"the warm vehicles' walk: {warmup.failed} calls failed")
        if self.walk is None:
            out.append("the cold walk did not finish")
        else:
            if self.walk.failed:
                out.append(f"the cold walk: {self.walk.failed} calls failed")
            if self.window is None:
                out.append("the cold walk's line has no start time (an older scripts/bench-entities.lua)")
            signed = self.signed()
            if signed is not None and signed != self.entities:
                out.append(f"{signed} tokens signed during the walk, want {self.entities}")
        for name, calls in (("every token cached", self.cached), ("while signing", self.signing)):
            if calls is None:
                continue
            if not calls.answer_times_us:
                out.append(f"warm calls, {name}: none answered")
            if calls.failed:
                out.append(f"warm calls, {name}: {calls.failed} failed")
        return out


def _slice_number(path: Path) -> int:
    # h2load-PHASE-K.log.gz
    return int(path.name.removesuffix(".log.gz").rsplit("-", 1)[1])
