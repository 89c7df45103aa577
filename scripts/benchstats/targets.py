"""The lines after the table (targets.json): each a measure of the rows, and for a target, its
comparison, threshold and issue, with whether it is met."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Union

from .order_statistics import ratio

TARGETS_FILE = Path(__file__).with_name("targets.json")

Number = Union[int, float]


def load(path: Path = TARGETS_FILE) -> list[dict]:
    return json.loads(path.read_text())["lines"]


def operand(expression: str, quantities: Mapping[str, Number | None]) -> Number | None:
    """ROW.QUANTITY, or A - B; None when a quantity is unknown."""
    terms = [quantities.get(name.strip()) for name in expression.split(" - ")]
    if any(term is None for term in terms):
        return None
    value = terms[0]
    for term in terms[1:]:
        value -= term
    return round(value, 2) if isinstance(value, float) else value


def shown(value: Number | None, places: int = 1) -> str:
    if value is None:
        return "n/a"
    return f"{value:.{places}f}" if isinstance(value, float) else str(value)


def compare(value: Number | None, comparison: str, limit: Number | None) -> str:
    if value is None or limit is None:
        return "n/a"
    met = value >= limit if comparison == ">=" else value <= limit
    return "yes" if met else "no"


@dataclass(frozen=True)
class Verdict:
    label: str
    now: str
    target: str  # empty for a line shown for reading
    met: str  # yes, no, n/a; empty for a line shown for reading


def evaluate(line: Mapping, quantities: Mapping[str, Number | None], names: Mapping[str, str]) -> Verdict:
    measure = line["measure"]
    value = operand(line["of"], quantities)
    beside = None
    if measure == "ratio":
        value = ratio(value, operand(line["over"], quantities))
        now = "n/a" if value is None else f"{value:.2f}x"
    elif measure == "pair":
        beside = operand(line["beside"], quantities)
        now = f"{shown(value)} ({shown(beside)})"
    elif measure == "value":
        now = shown(value, line.get("places", 1))
    else:
        raise ValueError(f"unknown measure {measure!r}")
    label = line["label"].format(**names)
    if "comparison" not in line:
        return Verdict(label, now, "", "")
    comparison, threshold = line["comparison"], line["threshold"]
    if threshold == "beside":
        limit = beside
        target = line["shown"]
    else:
        limit = threshold
        target = line.get("shown") or (f"{comparison} {threshold:.2f}x" if measure == "ratio" else f"{comparison} {threshold:g}")
    return Verdict(label, now, target, compare(value, comparison, limit))


# The modes of scripts/bench with a table of their own, each with its own lines.
MODES = ("remote", "signing", "idle")


def applies(line: Mapping, rest_h2: bool, h2: bool, mode: str = "run") -> bool:
    """Whether a line belongs to the table: a mode's lines (`when: remote`, `when: signing`, ...) to
    that mode's table only, the others to the loopback table as SKIP_H2 and REST_H2 leave it."""
    when = line.get("when")
    if mode in MODES or when in MODES:
        return when == mode
    return when is None or (when == "h2" and h2) or (when == "rest_h2" and rest_h2)


def issues(lines: list[Mapping]) -> list[int]:
    return sorted({line["issue"] for line in lines if "issue" in line})


def closing_lines(heading: str, verdicts: list[Verdict], problems: list[str], layout: str) -> list[str]:
    """The end of a mode's table: HEADING over its target lines (LAYOUT places label, now,
    target and met), then a `status:` line for each problem."""
    out = [layout.format(heading, "now", "target", "met")]
    out.extend(layout.format(v.label, v.now, v.target, v.met) for v in verdicts)
    out.append("")
    out.extend(f"status: {problem}" for problem in problems)
    if problems:
        out.append("")
    return out
