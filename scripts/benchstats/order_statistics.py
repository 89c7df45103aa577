"""Percentiles and medians, as the table reports them."""
from __future__ import annotations

from typing import Callable, Sequence, TypeVar

T = TypeVar("T")


def nearest_rank(sorted_values: Sequence[int], percent: int) -> int | None:
    """The nearest-rank percentile of values sorted in ascending order: the smallest value with
    at least `percent`% of them at or below it. Integer arithmetic, so 99% of 100 values is the
    99th and never the 100th by a rounding error. None for no values."""
    if not 0 < percent <= 100:
        raise ValueError(f"percent {percent} is not in 1...100")
    count = len(sorted_values)
    if count == 0:
        return None
    rank = max(1, (percent * count + 99) // 100)
    return sorted_values[rank - 1]


def median_round(rounds: Sequence[T], key: Callable[[T], float]) -> T | None:
    """The round that stands for a row: the median by `key`, the lower one of the two middle
    rounds for an even count (a round that was measured, never an average of two). Rounds with
    equal keys keep their order. None for no rounds."""
    if not rounds:
        return None
    ordered = sorted(rounds, key=key)
    return ordered[(len(ordered) + 1) // 2 - 1]


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """numerator / denominator rounded to two decimals (as the table prints it and as the
    targets compare it); None when either is unknown or the denominator is zero."""
    if numerator is None or denominator is None or denominator == 0:
        return None
    return round(numerator / denominator, 2)
