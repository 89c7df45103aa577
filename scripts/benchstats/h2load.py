"""h2load's summary and its per-request log (--log-file)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Iterator

from .latency import microseconds
from .order_statistics import nearest_rank


@dataclass(frozen=True)
class H2loadReport:
    elapsed_s: float | None  # "finished in 2.00s"
    requests_per_second: int | None
    started: int
    done: int
    succeeded: int
    failed: int  # h2load's failed (errored streams, 4xx/5xx) plus the 3xx: the bench wants 200
    data_bytes: int  # DATA payload received, the answers' bodies


_FINISHED = re.compile(r"^finished in ([0-9.]+(?:us|ms|s)), ([0-9.]+) req/s", re.MULTILINE)
_TRAFFIC_DATA = re.compile(r"^traffic:.*\(([0-9]+)\) data", re.MULTILINE)


def _counts(text: str, prefix: str) -> dict[str, int]:
    # "requests: 100 total, 100 started, 98 done, 97 succeeded, 3 failed, 1 errored, 0 timeout"
    match = re.search(rf"^{prefix}:(.*)$", text, re.MULTILINE)
    if match is None:
        return {}
    return {name: int(count) for count, name in re.findall(r"([0-9]+) (\w+)", match.group(1))}


def parse_report(text: str) -> H2loadReport:
    finished = _FINISHED.search(text)
    requests = _counts(text, "requests")
    statuses = _counts(text, "status codes")
    data = _TRAFFIC_DATA.search(text)
    elapsed_us = microseconds(finished.group(1)) if finished else None
    return H2loadReport(
        elapsed_s=None if elapsed_us is None else elapsed_us / 1_000_000,
        requests_per_second=int(f"{float(finished.group(2)):.0f}") if finished else None,
        started=requests.get("started", 0),
        done=requests.get("done", 0),
        succeeded=requests.get("succeeded", 0),
        failed=requests.get("failed", 0) + statuses.get("3xx", 0),
        data_bytes=int(data.group(1)) if data else 0,
    )


def answers_without_message(report: H2loadReport, message_bytes: int) -> int:
    """gRPC answers that did not carry the message: a refusal is a 200 with its status in the
    trailers and no DATA, which h2load counts as succeeded. The answers that carried it are the
    DATA bytes over the message's size."""
    return max(0, report.succeeded - report.data_bytes // message_bytes)


@dataclass(frozen=True)
class RequestLog:
    """h2load --log-file: a line per request, start time (us since the epoch), status (-1 for a
    stream that failed) and the time to its answer (us), tab-separated."""

    first_start_us: int | None  # of every request, answered or not
    last_answer_us: int | None  # the end of the last answered request
    answer_times_us: list[int]  # of the answered requests, ascending

    def percentile_us(self, percent: int) -> int | None:
        return nearest_rank(self.answer_times_us, percent)

    def quiet_s(self, elapsed_s: float) -> float | None:
        """Seconds from the last answer to the end of the run, to a tenth; None when nothing
        was logged or answered."""
        if self.first_start_us is None or self.last_answer_us is None:
            return None
        return round((self.first_start_us + elapsed_s * 1_000_000 - self.last_answer_us) / 1_000_000, 1)


@dataclass(frozen=True)
class LoggedRequest:
    start_us: int  # since the epoch
    status: int  # -1 for a stream that failed
    duration_us: int


def logged_requests(lines: Iterable[str]) -> Iterator[LoggedRequest]:
    """The lines of h2load's --log-file, in their order; a line that is not one is skipped."""
    for line in lines:
        fields = line.rstrip("\n").split("\t")
        if len(fields) < 3:
            continue
        yield LoggedRequest(int(fields[0]), int(fields[1]), int(fields[2]))


def read_request_log(lines: Iterable[str]) -> RequestLog:
    first = None
    last = None
    times = []
    for request in logged_requests(lines):
        start, status, duration = request.start_us, request.status, request.duration_us
        first = start if first is None else min(first, start)
        if status != -1:
            times.append(duration)
            end = start + duration
            last = end if last is None else max(last, end)
    times.sort()
    return RequestLog(first_start_us=first, last_answer_us=last, answer_times_us=times)


# h2load has no request timeout (and its connection timeouts crash it, 1.52), so a server that
# stops answering only shows as a low req/s. A run whose last answer came more than this long
# before its end stalled: the requests it left unanswered count as failed, like wrk's timeouts.
STALL_S = 1.0


def stalled(log: RequestLog, report: H2loadReport) -> float | None:
    """The quiet seconds at the end of a stalled run, or None when it did not stall."""
    if report.elapsed_s is None:
        return None
    quiet = log.quiet_s(report.elapsed_s)
    return quiet if quiet is not None and quiet > STALL_S else None
