"""One sample of the sidecar's /metrics (Prometheus text format)."""
from __future__ import annotations


def sample(metrics: str, name: str) -> float:
    """The value of the sample whose name, labels included, is exactly `name`
    (`fleet_token_proxy_provider_requests_total{outcome="success"}`); the last one if it repeats,
    0 when absent (a counter that has not moved yet is not always printed)."""
    value = 0.0
    for line in metrics.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == name:
            try:
                value = float(fields[1])
            except ValueError:
                continue
    return value
