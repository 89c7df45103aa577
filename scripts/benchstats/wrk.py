"""wrk's report (`wrk --latency`) and the `walk:` line of scripts/bench-entities.lua."""
from __future__ import annotations

import re
from dataclasses import dataclass

from .latency import microseconds


@dataclass(frozen=True)
class WrkReport:
    calls: int | None  # "N requests in ..."
    requests_per_second: int | None  # Requests/sec, rounded
    p50_us: int | None
    p99_us: int | None
    failed: int  # non-2xx/3xx responses and socket errors (connect, read, write, timeout)


_CALLS = re.compile(r"^\s*([0-9]+) requests in ", re.MULTILINE)
_RPS = re.compile(r"^Requests/sec:\s+([0-9.]+)", re.MULTILINE)
_NON_2XX = re.compile(r"Non-2xx or 3xx responses:\s+([0-9]+)")
_SOCKET_ERRORS = re.compile(r"Socket errors: connect ([0-9]+), read ([0-9]+), write ([0-9]+), timeout ([0-9]+)")


def _percentile(text: str, label: str) -> int | None:
    # The --latency distribution: "     50%  812.00us".
    match = re.search(rf"^\s*{re.escape(label)}\s+(\S+)\s*$", text, re.MULTILINE)
    if match is None:
        return None
    value = microseconds(match.group(1))
    return None if value is None else int(f"{value:.0f}")


def parse_report(text: str) -> WrkReport:
    calls = _CALLS.search(text)
    rps = _RPS.search(text)
    non_2xx = _NON_2XX.search(text)
    socket_errors = _SOCKET_ERRORS.search(text)
    failed = int(non_2xx.group(1)) if non_2xx else 0
    if socket_errors:
        failed += sum(int(count) for count in socket_errors.groups())
    return WrkReport(
        calls=int(calls.group(1)) if calls else None,
        requests_per_second=int(f"{float(rps.group(1)):.0f}") if rps else None,
        p50_us=_percentile(text, "50%"),
        p99_us=_percentile(text, "99%"),
        failed=failed,
    )


@dataclass(frozen=True)
class Walk:
    """A finished walk: every vehicle asked once, from the first request to the last answer."""

    answers: int
    duration_us: int
    failed: int
    started_us: int | None = None  # the first request, us since the epoch (older walks lack it)


_WALK = re.compile(r"^walk: requests=([0-9]+) duration_us=([0-9]+) failed=([0-9]+)(?: started_us=([0-9]+))?$",
                   re.MULTILINE)


def parse_walk(text: str) -> Walk | None:
    """The walk's line; None when the walk did not finish (wrk stopped before it printed it)."""
    match = _WALK.search(text)
    if match is None:
        return None
    started = match.group(4)
    return Walk(answers=int(match.group(1)), duration_us=int(match.group(2)), failed=int(match.group(3)),
                started_us=None if started is None else int(started))
