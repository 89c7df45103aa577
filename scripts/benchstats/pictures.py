"""Pictures of a results directory, as SVG (the README's docs/bench-remote.svg and
docs/bench-loopback.svg): what the tables say where a picture says it better.

  remote (MODE=remote)  four panels, one bar per proxy: the first call after idle (REST and gRPC,
                        against the round trip), a cold start (COLD_CALLS calls 1 s after the
                        proxy started, against two round trips), upstream connections opened and
                        TLS handshakes (full, resumed) a round, CPU per REST call
  loopback (a `run`)    two panels: calls a second of each row that compares proxies (HTTP/1.1
                        and gRPC), and CPU per call split into user and system time

Numbers come from the same reports as the tables (RemoteReport, Report), so a picture and its
table cannot disagree. matplotlib is the one dependency outside the standard library
(requirements.txt beside this file); only this module imports it, and only when drawing.
"""
from __future__ import annotations

from pathlib import Path

from . import rows
from .remote import HEADINGS, IDLE_PROXIES, PROXIES, RemoteReport
from .results import ResultsDir
from .table import Report

# The rows of the loopback picture: the ones that compare proxies on the same calls.
LOOPBACK_HTTP1 = ["direct", "nginx", "haproxy", "sidecar"]
LOOPBACK_GRPC = ["gdirect", "gnginx", "ghaproxy", "gsidecar"]
SIDECAR_COLOUR = "#d9480f"
OTHER_COLOUR = "#868e96"
ANCHOR_COLOUR = "#ced4da"  # direct: no proxy at all


def _colour(name: str) -> str:
    if "sidecar" in name:
        return SIDECAR_COLOUR
    return ANCHOR_COLOUR if "direct" in name else OTHER_COLOUR


def _figure(width: float, height: float):
    """A figure that writes the same SVG for the same numbers: fixed ids, no date, text kept as
    text (so that the labels can be read, and searched, in the file)."""
    import matplotlib
    from matplotlib.figure import Figure

    matplotlib.rcParams.update({"svg.hashsalt": "fleet-token-proxy", "svg.fonttype": "none", "font.size": 9,
                                "axes.spines.top": False, "axes.spines.right": False})
    return Figure(figsize=(width, height))


def _legend(axes, entries: list[tuple[str, str]], extra: list | None = None):
    """A legend of hatches (label, hatch) in a neutral colour: the bars' colours tell proxies
    apart, the hatches what is measured."""
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=OTHER_COLOUR, edgecolor="white", hatch=hatch, label=label) for label, hatch in entries]
    axes.legend(handles=handles + (extra or []), fontsize=7, frameon=False)


def _bars(axes, labels: list[str], values: list[float | None], colours: list[str], unit: str, places: int = 0):
    """One bar per label; a missing value is shown as `n/a` instead of a bar."""
    positions = range(len(labels))
    heights = [value or 0 for value in values]
    axes.bar(positions, heights, color=colours, width=0.65)
    axes.set_xticks(list(positions), labels)
    top = max(heights, default=0) or 1
    for position, value in zip(positions, values):
        text = "n/a" if value is None else f"{value:.{places}f}"
        axes.annotate(text, (position, (value or 0) + top * 0.02), ha="center", va="bottom", fontsize=8)
    axes.set_ylim(0, top * 1.18)
    axes.set_ylabel(unit)


def remote_figure(report: RemoteReport):
    s = report.settings
    rtt = report.rtt_ms
    figure = _figure(10, 7.2)
    grid = figure.subplots(2, 2)
    idle_s = max(report.idle_seconds) if report.idle_seconds else None

    # First call after idle: REST and gRPC side by side for each proxy that keeps connections.
    axes = grid[0][0]
    proxies = IDLE_PROXIES["rest"]
    width = 0.38
    for offset, (kind, label, hatch) in enumerate((("rest", "REST", ""), ("grpc", "gRPC", "//"))):
        values = [report.first_call(kind, p, idle_s) if idle_s is not None and p in IDLE_PROXIES[kind] else None
                  for p in proxies]
        positions = [i + (offset - 0.5) * width for i in range(len(proxies))]
        axes.bar(positions, [v or 0 for v in values], width=width, color=[_colour(p) for p in proxies],
                 hatch=hatch, edgecolor="white", label=label)
        for position, value in zip(positions, values):
            if value is not None:
                axes.annotate(f"{value:.0f}", (position, value + 1), ha="center", va="bottom", fontsize=7)
    axes.set_xticks(range(len(proxies)), [HEADINGS[p] for p in proxies])
    lines = [axes.axhline(rtt, color="black", linewidth=0.8, linestyle=":", label=f"one round trip ({rtt:g} ms)")] if rtt else []
    axes.set_ylabel("ms")
    axes.set_title(f"First call after {idle_s} s idle" if idle_s is not None else "First call after idle")
    _legend(axes, [("REST", ""), ("gRPC", "//")], lines)

    # Cold start.
    axes = grid[0][1]
    _bars(axes, [HEADINGS[p] for p in PROXIES], [report.cold(p)[0] for p in PROXIES],
          [_colour(p) for p in PROXIES], "ms")
    if rtt:
        axes.axhline(2 * rtt, color="black", linewidth=0.8, linestyle=":", label=f"two round trips ({2 * rtt:g} ms)")
        axes.legend(fontsize=7, frameon=False)
    axes.set_title(f"Cold start: {s.get('COLD_CALLS')} calls for a new vehicle, 1 s after start")

    # Connections and handshakes a round.
    axes = grid[1][0]
    width = 0.27
    series = [
        ("upstream connections", [report.connections_per_round(p) for p in PROXIES], ""),
        ("full TLS handshakes", [getattr(report.handshakes(p), "full", None) for p in PROXIES], "//"),
        ("resumed TLS handshakes", [getattr(report.handshakes(p), "resumed", None) for p in PROXIES], "xx"),
    ]
    for offset, (label, values, hatch) in enumerate(series):
        positions = [i + (offset - 1) * width for i in range(len(PROXIES))]
        axes.bar(positions, [v or 0 for v in values], width=width, color=[_colour(p) for p in PROXIES],
                 hatch=hatch, edgecolor="white", label=label)
        for position, value in zip(positions, values):
            if value is not None:
                axes.annotate(str(value), (position, value + 1), ha="center", va="bottom", fontsize=7)
    axes.set_xticks(range(len(PROXIES)), [HEADINGS[p] for p in PROXIES])
    axes.set_title(f"Upstream connections and handshakes (REST, c={s.get('CONNECTIONS')}, a round)")
    _legend(axes, [(label, hatch) for label, _, hatch in series])

    # CPU per call.
    axes = grid[1][1]
    _bars(axes, [HEADINGS[p] for p in PROXIES], [report.cpu_us_over_rounds(report.rest[p]) for p in PROXIES],
          [_colour(p) for p in PROXIES], "us of CPU a call")
    axes.set_title("CPU per REST call (the proxy's process, every round)")

    figure.suptitle(f"A TLS upstream {rtt:g} ms away: sidecar, nginx and HAProxy (scripts/bench remote)"
                    if rtt else "A remote TLS upstream (scripts/bench remote)", fontsize=11)
    figure.text(0.01, 0.005, f"commit {s.get('COMMIT')}, {s.get('FINISHED')}; RTT_MS={s.get('RTT_MS')} "
                f"DURATION={s.get('DURATION')} RUNS={s.get('RUNS')} IDLE_S=\"{s.get('IDLE_S')}\"; "
                f"{s.get('NPROC')} cores", fontsize=7, color="#495057")
    figure.tight_layout(rect=(0, 0.02, 1, 0.97))
    return figure


def loopback_figure(report: Report):
    s = report.settings
    names = [row for row in LOOPBACK_HTTP1 + (LOOPBACK_GRPC if not s.flag("SKIP_H2") else []) if row in report.rows]
    labels = [rows.label(row, s).replace("grpc ", "gRPC\n") for row in names]
    medians = [report.rows[row].median for row in names]
    figure = _figure(10, 4.2)
    left, right = figure.subplots(1, 2)

    _bars(left, labels, [m.requests_per_second if m else None for m in medians], [_colour(n) for n in names],
          "calls a second (median round)")
    left.set_title(f"Throughput: HTTP/1.1 wrk -c{s.get('CONNECTIONS')}, gRPC h2load -c{s.get('H2_CLIENTS')} "
                   f"-m{s.get('H2_STREAMS')}")

    user = [m.user_us if m and m.user_us is not None else None for m in medians]
    system = [None if m is None or m.cpu_us is None or m.user_us is None else round(m.cpu_us - m.user_us, 1)
              for m in medians]
    positions = range(len(names))
    right.bar(positions, [u or 0 for u in user], color=[_colour(n) for n in names], width=0.65)
    right.bar(positions, [v or 0 for v in system], bottom=[u or 0 for u in user], color=[_colour(n) for n in names],
              edgecolor="white", hatch="//", width=0.65)
    for position, m in zip(positions, medians):
        if m is not None and m.cpu_us is not None:
            right.annotate(f"{m.cpu_us:.1f}", (position, m.cpu_us + 0.5), ha="center", va="bottom", fontsize=8)
    right.set_xticks(list(positions), labels)
    right.set_ylabel("us of CPU a call")
    right.set_title("CPU per call: user and system (the server's process)")
    _legend(right, [("user", ""), ("system", "//")])

    figure.suptitle("Loopback, one worker each: sidecar, nginx and HAProxy (scripts/bench run)", fontsize=11)
    figure.text(0.01, 0.005, f"commit {s.get('COMMIT')}, {s.get('FINISHED')}; RUNS={s.get('RUNS')} "
                f"DURATION={s.get('DURATION')}; {s.get('NPROC')} cores, load average {s.get('LOAD_BEFORE')} before",
                fontsize=7, color="#495057")
    figure.tight_layout(rect=(0, 0.03, 1, 0.95))
    return figure


def draw(directory: Path, out: Path) -> None:
    """The picture of a results directory (a `remote` run's or a loopback run's) as SVG at OUT."""
    results = ResultsDir(directory)
    mode = results.settings.get("MODE")
    if mode == "remote":
        figure = remote_figure(RemoteReport(results))
    elif mode in ("", "run"):
        figure = loopback_figure(Report(results))
    else:
        raise ValueError(f"{directory}: no picture for a `{mode}` run (remote and loopback runs have one)")
    figure.savefig(out, format="svg", metadata={"Date": None})
