"""python3 -m benchstats COMMAND ...: what scripts/bench asks of its results.

  report DIR                 print the table of a results directory (and write DIR/summary.txt),
                             the remote or signing mode's when its settings say MODE=remote or
                             MODE=signing; exit 1 when an anchor or a sidecar row failed
  warmup WALK METRICS N      the many-entity warm-up: its walk finished without a failed call and
                             the sidecar's /metrics shows N fetches and N cached entities; prints
                             what it found, exits 1 when it is not so
  grpc-answer VERBOSE        nghttp -v's output of one GetVehicle call: a 200 with a
                             grpc-status: 0 trailer after the DATA; prints why not and exits 1
  option-default OPTION      the default of OPTION in a --help text read from stdin
  table-rows                 the rows of the table in order, as SKIP_H2 and REST_H2 in the
                             environment leave them (the order of a round)
  callgrind N1 OUT1 H2LOAD1 N2 OUT2 H2LOAD2
                             instructions per call between two callgrind runs of N1 and N2
                             calls, whose h2load outputs must show every call answered
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from . import callgrind, checks, h2load, rows
from .remote import RemoteReport
from .results import ResultsDir
from .settings import Settings
from .signing import SigningReport
from .table import Report


def report(directory: str) -> int:
    results = ResultsDir(Path(directory))
    table = {"remote": RemoteReport, "signing": SigningReport}.get(results.settings.get("MODE"), Report)(results)
    lines = table.lines()
    for note in results.notes:
        print(f"bench: {note}", file=sys.stderr)
    text = "\n".join(lines) + "\n"
    (results.path / "summary.txt").write_text(text)
    sys.stdout.write(text)
    failures = table.failures()
    for failure in failures:
        print(f"bench: failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


def callgrind_per_call(*runs: tuple[int, str, str]) -> int:
    totals = []
    for calls, profile, client in runs:
        report = h2load.parse_report(Path(client).read_text(errors="replace"))
        if report.done != calls or report.succeeded != calls or report.failed:
            print(f"{client}: {report.succeeded} of {calls} calls succeeded ({report.done} done, "
                  f"{report.failed} failed)", file=sys.stderr)
            return 1
        total = callgrind.instructions(Path(profile).read_text(errors="replace"))
        if total is None:
            print(f"{profile}: no instruction total", file=sys.stderr)
            return 1
        totals.append(total)
    (low_calls, _, _), (high_calls, _, _) = runs
    print(f"{callgrind.per_call(totals[0], totals[1], low_calls, high_calls):.0f}")
    return 0


def main(arguments: list[str]) -> int:
    command, rest = (arguments[0], arguments[1:]) if arguments else ("", [])
    if command == "report" and len(rest) == 1:
        return report(rest[0])
    if command == "warmup" and len(rest) == 3:
        ok, message = checks.warmup(Path(rest[0]).read_text(errors="replace"), Path(rest[1]).read_text(), int(rest[2]))
        print(message)
        return 0 if ok else 1
    if command == "grpc-answer" and len(rest) == 1:
        why = checks.grpc_answer(Path(rest[0]).read_text(errors="replace"))
        if why:
            print(why)
        return 1 if why else 0
    if command == "option-default" and len(rest) == 1:
        value = checks.option_default(sys.stdin.read(), rest[0])
        if value is None:
            return 1
        print(value)
        return 0
    if command == "table-rows" and not rest:
        print(" ".join(rows.table_rows(Settings(dict(os.environ)))))
        return 0
    if command == "callgrind" and len(rest) == 6:
        return callgrind_per_call((int(rest[0]), rest[1], rest[2]), (int(rest[3]), rest[4], rest[5]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
