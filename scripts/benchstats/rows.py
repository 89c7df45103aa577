"""The rows of the table, in the order of a round and of the table, and which of them decide
the exit status (scripts/bench's header describes what each row runs)."""
from __future__ import annotations

from .settings import Settings

HTTP1_ROWS = ["direct", "nginx", "haproxy", "sidecar", "many1", "many", "direct1", "nginx1", "sidecar1"]
GRPC_ROWS = ["gdirect", "ghaproxy", "gnginx", "gsidecar"]
REST_H2_ROWS = ["h2direct", "h2nginx", "h2sidecar"]
SIDECAR_ROWS = ["sidecar", "sidecar1", "many1", "many", "gsidecar", "h2sidecar", "cold"]

_LABELS = {
    "direct": "direct", "nginx": "nginx", "haproxy": "haproxy", "sidecar": "sidecar",
    "many1": "sidecar 1 id", "many": "sidecar {ENTITIES} ids",
    "direct1": "direct -c1", "nginx1": "nginx -c1", "sidecar1": "sidecar -c1",
    "gdirect": "grpc direct", "ghaproxy": "grpc haproxy", "gnginx": "grpc nginx", "gsidecar": "grpc sidecar",
    "h2direct": "h2 direct", "h2nginx": "h2 nginx", "h2sidecar": "h2 sidecar",
    "cold": "cold misses",
}


def label(row: str, settings: Settings) -> str:
    return _LABELS[row].format(ENTITIES=settings.get("ENTITIES"))


def kind(row: str) -> str:
    """Which client measured the row: `h2load` (the gRPC and REST h2c rows), `walk` (the cold
    row) or `wrk`."""
    if row == "cold":
        return "walk"
    if row.startswith("g") or row.startswith("h2"):
        return "h2load"
    return "wrk"


def table_rows(settings: Settings) -> list[str]:
    rows = list(HTTP1_ROWS)
    if not settings.flag("SKIP_H2"):
        rows += GRPC_ROWS
    if settings.flag("REST_H2"):
        rows += REST_H2_ROWS
    return rows + ["cold"]


def anchor_rows(settings: Settings) -> list[str]:
    """The rows of the proxies the sidecar is measured against: each must be ok."""
    rows = ["direct", "nginx", "haproxy", "direct1", "nginx1"]
    if not settings.flag("SKIP_H2"):
        rows += ["gdirect", "ghaproxy", "gnginx"]
    if settings.flag("REST_H2"):
        rows += ["h2direct", "h2nginx"]
    return rows
