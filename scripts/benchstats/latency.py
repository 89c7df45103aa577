"""Durations as the benchmark clients print them."""
from __future__ import annotations

import re

# wrk prints a latency with the unit it picked: 812.00us, 1.20ms, 2.00s, 1.50m, 1.00h.
_MICROSECONDS = {"us": 1, "ms": 1_000, "s": 1_000_000, "m": 60_000_000, "h": 3_600_000_000}
_DURATION = re.compile(r"^([0-9]+(?:\.[0-9]*)?)(us|ms|s|m|h)$")


def microseconds(text: str) -> float | None:
    """A duration such as `812.00us` or `1.20ms` in microseconds; None when it is not one."""
    match = _DURATION.match(text.strip())
    if match is None:
        return None
    return float(match.group(1)) * _MICROSECONDS[match.group(2)]
