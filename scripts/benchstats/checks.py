"""Checks scripts/bench makes while it runs, before it decides what to measure."""
from __future__ import annotations

import re

from . import prometheus, wrk
from .results import CACHED_ENTITIES, PROVIDER_FETCHES


def warmup(walk_output: str, metrics: str, entities: int) -> tuple[bool, str]:
    """The many-entity sidecar after its warm-up walk: (ready, what was found or why not)."""
    walk = wrk.parse_walk(walk_output)
    if walk is None:
        return False, "the warm-up walk did not finish"
    if walk.failed:
        return False, f"the warm-up walk had {walk.failed} failed calls"
    fetches = int(prometheus.sample(metrics, PROVIDER_FETCHES))
    cached = int(prometheus.sample(metrics, CACHED_ENTITIES))
    if fetches != entities or cached != entities:
        return False, f"after the warm-up: {fetches} provider fetches and {cached} cached entities, want {entities}"
    return True, f"warmed: {fetches} provider fetches, {cached} cached entities, in {walk.duration_us // 1000} ms"


def grpc_answer(verbose: str) -> str | None:
    """Why nghttp -v's call is not a gRPC success (a :status 200 and a grpc-status: 0 field
    received after the DATA frame: the trailer), or None."""
    if not re.search(r"recv \(stream_id=[0-9]*\) :status: 200", verbose):
        return "the gRPC call's answer is not a 200"
    data = verbose.find("recv DATA frame")
    if data < 0 or not re.search(r"recv \(stream_id=[0-9]+\) grpc-status: 0", verbose[data:]):
        return "no grpc-status: 0 trailer after the message"
    return None


def option_default(help_text: str, option: str) -> str | None:
    """The `(default: X)` that follows OPTION in a --help text (it may wrap onto later lines)."""
    start = help_text.find(option)
    if start < 0:
        return None
    match = re.search(r"default: *([^)]*)\)", help_text[start:])
    return match.group(1).strip() if match else None
