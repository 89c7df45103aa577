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


# The callgrind mode's rows: the profile name of each protocol (the sidecar's profiles are
# callgrind-PROTOCOL-N.out, a proxy's callgrind-PROTOCOL-SERVER-N.out) and its label.
PROTOCOLS = (
    ("h1", "HTTP/1.1: GET of one vehicle over keep-alive"),
    ("h2c", "gRPC h2c: GetVehicle"),
    ("h1tls", "REST TLS: the HTTP/1.1 GET, to the TLS upstream"),
)
SERVERS = ("sidecar", "nginx", "haproxy")
SERVER_NAMES = {"sidecar": "sidecar", "nginx": "nginx", "haproxy": "HAProxy"}
# Rows a server has no run in: nginx's grpc_pass fails calls of its own (scripts/bench's header).
NOT_RUN = {("h2c", "nginx")}


def profile_name(protocol: str, server: str) -> str:
    return protocol if server == "sidecar" else f"{protocol}-{server}"


def table(counts: dict[tuple[str, str], float]) -> list[str]:
    """The table of instructions per call: a row per protocol, a column per server (`-` where a
    server has no count), and the sidecar's count over the fewest of the proxies'."""
    names = " ".join(f"{SERVER_NAMES[server]:>8}" for server in SERVERS)
    lines = [f"{'':50} {names} {'sidecar/fewest':>15}"]
    for protocol, label in PROTOCOLS:
        cells = [counts.get((protocol, server)) for server in SERVERS]
        proxies = [count for count in cells[1:] if count is not None]
        sidecar = cells[0]
        ratio = f"{sidecar / min(proxies):.2f}x" if sidecar is not None and proxies else "-"
        shown = ["-" if count is None else f"{count:.0f}" for count in cells]
        lines.append(f"{label:50} {shown[0]:>8} {shown[1]:>8} {shown[2]:>8} {ratio:>15}")
    return lines
