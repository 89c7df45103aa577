"""The idle mode's results (scripts/bench idle): a fresh sidecar's resident memory at idle, by
kind of upstream, with its anonymous and file-backed parts and the mappings that hold it:
issue 27's "idle memory under 12 MB with the default https upstream".

The mode leaves, beside settings.env (MODE=idle; BINARY, the executable's file name) and
status.tsv (`idle-KIND<TAB>why` for a sidecar that did not start):
  idle-KIND-N.status         /proc/PID/status of sample N (VmRSS, RssAnon, RssFile)
  idle-KIND-N.smaps          /proc/PID/smaps: each mapping's resident set
  idle-KIND-N.smaps_rollup   the same, summed (kept for reading)
for KIND http, https and https-down.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import procfs, targets
from .results import ResultsDir

# The kinds of upstream, in the table's order, with what each is.
KINDS = (
    ("http", "http://, answering"),
    ("https", "https://, answering (TLS, h2)"),
    ("https-down", "https://, refusing the dial"),
)
# The mappings the table names, in its order: each a group of /proc/PID/smaps mappings.
GROUPS = ("binary", "libcrypto", "libssl", "libc", "heap", "other")

_TARGET = "{:<58} {:>10} {:>10} {:>5}"
_MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$")
_RSS = re.compile(r"^Rss:\s+([0-9]+) kB")


def group_of(path: str, binary: str) -> str:
    """The table's group of a mapping, from the path /proc/PID/smaps gives it."""
    name = path.rsplit("/", 1)[-1]
    if name == binary:
        return "binary"
    if name == "[heap]":
        return "heap"
    for library in ("libcrypto", "libssl", "libc"):
        if name.startswith(f"{library}.so") or name.startswith(f"{library}-"):
            return library
    return "other"


def resident_by_group(smaps: str, binary: str) -> dict[str, int]:
    """Resident kB of each group (GROUPS) in the text of /proc/PID/smaps."""
    totals = dict.fromkeys(GROUPS, 0)
    group = None
    for line in smaps.splitlines():
        mapping = _MAPPING.match(line)
        if mapping:
            group = group_of(mapping.group(1), binary)
            continue
        rss = _RSS.match(line)
        if rss and group is not None:
            totals[group] += int(rss.group(1))
    return totals


@dataclass(frozen=True)
class Sample:
    kind: str
    number: int
    rss_kb: int
    parts: procfs.ResidentParts
    groups: dict[str, int]

    @property
    def rss_mb(self) -> float:
        """MB (MiB, as the rest of the bench) to two places: a target of 12 is met by 11.99 and
        not by 12.04, which one place would both show as 12.0."""
        return round(self.rss_kb / 1024, 2)


class IdleReport:
    def __init__(self, results: ResultsDir):
        self.results = results
        self.settings = results.settings
        self.binary = self.settings.get("BINARY", "fleet-token-proxy")

    def samples(self, kind: str) -> list[Sample]:
        found = []
        for path in sorted(self.results.path.glob(f"idle-{kind}-*.status")):
            number = path.name.removeprefix(f"idle-{kind}-").removesuffix(".status")
            if not number.isdigit():
                continue
            status = path.read_text(errors="replace")
            rss, parts = procfs.rss_kb(status), procfs.resident_parts(status)
            if rss is None or parts is None:
                continue
            smaps = self.results.text(f"idle-{kind}-{number}.smaps") or ""
            found.append(Sample(kind, int(number), rss, parts, resident_by_group(smaps, self.binary)))
        return sorted(found, key=lambda sample: sample.number)

    def median(self, kind: str) -> Sample | None:
        """The median sample by VmRSS (the lower middle one of an even number)."""
        samples = sorted(self.samples(kind), key=lambda sample: sample.rss_kb)
        return samples[(len(samples) - 1) // 2] if samples else None

    # --- the quantities the targets read (targets.json, `when: idle`) -----------------------

    def quantities(self) -> dict[str, float | None]:
        values: dict[str, float | None] = {}
        for kind, _ in KINDS:
            sample = self.median(kind)
            values[f"{kind}.rss_mb"] = None if sample is None else sample.rss_mb
            values[f"{kind}.anon_mb"] = None if sample is None else sample.parts.anon_mb
            values[f"{kind}.file_mb"] = None if sample is None else sample.parts.file_mb
        return values

    def verdicts(self) -> list[targets.Verdict]:
        quantities = self.quantities()
        return [targets.evaluate(line, quantities, {}) for line in targets.load()
                if targets.applies(line, rest_h2=False, h2=True, mode="idle")]

    # --- the table ----------------------------------------------------------------------------

    def lines(self) -> list[str]:
        s = self.settings
        counts = {kind: len(self.samples(kind)) for kind, _ in KINDS}
        out = [
            f"fleet-token-proxy bench idle, {s.get('FINISHED')}",
            f"host: {s.get('NPROC')} cores, {s.get('KERNEL')}; {s.get('NGINX_VERSION').removeprefix('nginx version: ')}",
            f"load average before the samples: {s.get('LOAD_BEFORE')}; after: {s.get('LOAD_AFTER')}",
            f"commit: {s.get('COMMIT')}; serve --admin-listen, {s.get('IDLE_SETTLE_S')} s after its first /healthz answer; "
            f"median of {max(counts.values(), default=0)} sample(s) by VmRSS",
            "",
            f"{'upstream':<30}{'RSS MB':>7}{'anon':>6}{'file':>6}  " + "".join(f"{group:>10}" for group in GROUPS),
        ]
        for kind, label in KINDS:
            sample = self.median(kind)
            if sample is None:
                out.append(f"{label:<30}{'-':>7}{'-':>6}{'-':>6}  " + "".join(f"{'-':>10}" for _ in GROUPS))
                continue
            out.append(f"{label:<30}{sample.rss_mb:>7.2f}{sample.parts.anon_mb:>6.1f}{sample.parts.file_mb:>6.1f}  "
                       + "".join(f"{sample.groups[group] / 1024:>10.1f}" for group in GROUPS))
        out.append("")
        out.extend(targets.closing_lines("issue 27 target", self.verdicts(), self.failures(), _TARGET))
        return out

    def failures(self) -> list[str]:
        """A sidecar that did not start, or a kind without a sample. A target not met is not a
        failure."""
        out = [f"{row}: {why}" for row, why in self.results.statuses.items()]
        out.extend(f"idle-{kind}: no sample" for kind, _ in KINDS
                   if not self.samples(kind) and f"idle-{kind}" not in self.results.statuses)
        return out
