"""The log of scripts/bench's delay relay (relay.c beside this file, built by the remote mode): a
`listening PORT` line, then one `accept UNIX_TIME` line per connection it accepted, which the
remote table counts as upstream connections opened per round."""
from __future__ import annotations


def accepts(log: str, start: float | None = None, end: float | None = None) -> int:
    """The `accept` lines of a relay's output, those at or after START and before END when given."""
    count = 0
    for line in log.splitlines():
        word, _, stamp = line.partition(" ")
        if word != "accept":
            continue
        try:
            when = float(stamp)
        except ValueError:
            continue
        if (start is None or when >= start) and (end is None or when < end):
            count += 1
    return count
