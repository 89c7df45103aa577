"""Instructions per call from two callgrind runs of the same calls, N1 and N2 of them."""
from __future__ import annotations

import re


def instructions(profile: str) -> int | None:
    """The run's total Ir (the first event, `--tool=callgrind`'s default) from a callgrind.out
    file: its `totals:` line, or `summary:` in a file that has none."""
    for name in ("totals", "summary"):
        match = re.search(rf"^{name}:\s+([0-9]+)", profile, re.MULTILINE)
        if match:
            return int(match.group(1))
    return None


def per_call(low_total: int, high_total: int, low_calls: int, high_calls: int) -> float:
    """(Ir at N2 calls - Ir at N1 calls) / (N2 - N1): start-up, warm-up and shutdown are in
    both runs and cancel out."""
    if high_calls <= low_calls:
        raise ValueError(f"the second run must make more calls ({high_calls} <= {low_calls})")
    return (high_total - low_total) / (high_calls - low_calls)
