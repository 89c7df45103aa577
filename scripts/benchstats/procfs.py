"""What the benchmark reads of a process in /proc: CPU time from /proc/PID/stat and the
resident set from /proc/PID/status, each saved by scripts/bench as a copy of the file."""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class CPUTicks:
    """CPU time a process (all its threads) has used, in clock ticks."""

    user: int
    system: int

    @property
    def total(self) -> int:
        return self.user + self.system


def cpu_ticks(stat: str) -> CPUTicks | None:
    """utime and stime from the text of /proc/PID/stat: fields 14 and 15 of proc(5), the 12th
    and 13th after the `)` that ends the command name (which may itself hold spaces or a `)`).
    None for an empty or cut-short sample (the process had gone)."""
    _, separator, rest = stat.rpartition(") ")
    fields = rest.split()
    if not separator or len(fields) < 13:
        return None
    try:
        return CPUTicks(user=int(fields[11]), system=int(fields[12]))
    except ValueError:
        return None


def cpu_us_per_call(before: int | None, after: int | None, calls: int | None, ticks_per_second: int) -> float | None:
    """Microseconds of CPU a call between two samples, to a tenth (a clock tick is 10 ms: over a
    5 s run of 50k calls, 0.2 us a call); None without both samples or without calls."""
    if before is None or after is None or not calls or calls <= 0:
        return None
    return round((after - before) * 1_000_000 / ticks_per_second / calls, 1)


_VMRSS = re.compile(r"^VmRSS:\s+([0-9]+)\s+kB", re.MULTILINE)


def rss_kb(status: str) -> int | None:
    """VmRSS, in kB, from the text of /proc/PID/status; None when absent."""
    match = _VMRSS.search(status)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class ResidentParts:
    """The resident set split as /proc/PID/status splits it, in kB: anonymous memory (heap,
    stacks: what the process made) and file-backed pages (the mapped binary and libraries, which
    the kernel can drop and read again), which move for different reasons."""

    anon_kb: int
    file_kb: int

    @property
    def anon_mb(self) -> float:
        return round(self.anon_kb / 1024, 1)

    @property
    def file_mb(self) -> float:
        return round(self.file_kb / 1024, 1)


_RSS_ANON = re.compile(r"^RssAnon:\s+([0-9]+)\s+kB", re.MULTILINE)
_RSS_FILE = re.compile(r"^RssFile:\s+([0-9]+)\s+kB", re.MULTILINE)


def resident_parts(status: str) -> ResidentParts | None:
    """RssAnon and RssFile from the text of /proc/PID/status; None when either is absent."""
    anon, file = _RSS_ANON.search(status), _RSS_FILE.search(status)
    if not anon or not file:
        return None
    return ResidentParts(anon_kb=int(anon.group(1)), file_kb=int(file.group(1)))
