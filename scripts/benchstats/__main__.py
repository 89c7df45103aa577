"""python3 -m benchstats COMMAND ...: what scripts/bench asks of its results.

  report DIR                 print the table of a results directory (and write DIR/summary.txt),
                             the remote, signing or idle mode's when its settings say MODE=remote,
                             MODE=signing or MODE=idle; exit 1 when an anchor or a sidecar row failed
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
  draw DIR OUT.svg           the picture of a remote or loopback run's results directory
                             (pictures.py; needs matplotlib: scripts/bench draw sets it up)
  callgrind-table DIR N1 N2 SERVER...
                             the callgrind mode's table: instructions per call of each SERVER
                             (sidecar, nginx, haproxy) over each protocol, from DIR's profiles
                             and h2load outputs of N1 and N2 calls, after the proxies' credential
                             (PROXY_CREDENTIAL and CREDENTIAL_BYTES in the environment)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from . import callgrind, checks, h2load, rows
from .idle import IdleReport
from .remote import RemoteReport
from .results import ResultsDir
from .settings import Settings
from .signing import SigningReport
from .table import Report


def report(directory: str) -> int:
    results = ResultsDir(Path(directory))
    table = {"remote": RemoteReport, "signing": SigningReport, "idle": IdleReport}.get(results.settings.get("MODE"), Report)(results)
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


def per_call(*runs: tuple[int, str, str]) -> float:
    """Instructions per call between two runs (calls, profile, h2load's output); raises
    ValueError, saying why, when a run is missing, short of calls or without a total."""
    totals = []
    for calls, profile, client in runs:
        try:
            client_text = Path(client).read_text(errors="replace")
            profile_text = Path(profile).read_text(errors="replace")
        except OSError as error:
            raise ValueError(f"{error.filename}: {error.strerror}") from error
        report = h2load.parse_report(client_text)
        if report.done != calls or report.succeeded != calls or report.failed:
            raise ValueError(f"{client}: {report.succeeded} of {calls} calls succeeded ({report.done} done, "
                             f"{report.failed} failed)")
        total = callgrind.instructions(profile_text)
        if total is None:
            raise ValueError(f"{profile}: no instruction total")
        totals.append(total)
    (low_calls, _, _), (high_calls, _, _) = runs
    return callgrind.per_call(totals[0], totals[1], low_calls, high_calls)


def callgrind_per_call(*runs: tuple[int, str, str]) -> int:
    try:
        print(f"{per_call(*runs):.0f}")
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


def callgrind_table(directory: str, low_calls: int, high_calls: int, servers: list[str]) -> int:
    """The callgrind mode's table over DIR's profiles of SERVERS (each must have every row but
    those in callgrind.NOT_RUN)."""
    unknown = [server for server in servers if server not in callgrind.SERVERS]
    if unknown or "sidecar" not in servers:
        print(f"callgrind-table: servers are the sidecar and any of nginx, haproxy, not {servers}", file=sys.stderr)
        return 2
    counts: dict[tuple[str, str], float] = {}
    for protocol, _ in callgrind.PROTOCOLS:
        for server in servers:
            if (protocol, server) in callgrind.NOT_RUN:
                continue
            name = callgrind.profile_name(protocol, server)
            runs = [(calls, f"{directory}/callgrind-{name}-{calls}.out", f"{directory}/h2load-callgrind-{name}-{calls}.txt")
                    for calls in (low_calls, high_calls)]
            try:
                counts[(protocol, server)] = per_call(*runs)
            except ValueError as error:
                print(error, file=sys.stderr)
                return 1
    # The proxies' credential, in the words of the other tables (PROXY_CREDENTIAL and
    # CREDENTIAL_BYTES in the environment, as scripts/bench sets them).
    lines = [] if servers == ["sidecar"] else [Settings(dict(os.environ)).credential_line()]
    print("\n".join(lines + callgrind.table(counts)))
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
    if command == "callgrind-table" and len(rest) >= 4:
        return callgrind_table(rest[0], int(rest[1]), int(rest[2]), rest[3:])
    if command == "draw" and len(rest) == 2:
        from .pictures import draw
        try:
            draw(Path(rest[0]), Path(rest[1]))
        except ValueError as error:
            print(error, file=sys.stderr)
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
