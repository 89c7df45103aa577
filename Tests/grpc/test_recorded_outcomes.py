"""What the access log and the metrics say of a gRPC call is what the official client saw
(docs/CONTRACT.md §5, "What a call is recorded as", issue 25).

`fleet_token_proxy_requests_total{protocol="grpc",code}` and the access log's `status=` hold the
gRPC status the client received — Fleet Engine's, relayed from its trailers, or the sidecar's own
answer — and `cancelled` for a call its client gave up on; never the HTTP/2 `:status`, which is
200 for every gRPC answer, failures included. Each test starts its own sidecar (`--access-log`,
`--admin-listen`), so its counts are its calls' alone.
"""
from __future__ import annotations

import re
import socket
import time
import urllib.request

import grpc
import pytest
from google.api_core import exceptions as api_exceptions
from google.maps import fleetengine_v1 as fe

from conftest import PROVIDER_ID, official_clients
from fleet_entities import VEHICLE, Entity


class Recorded:
    """A sidecar's record of its calls: the metrics page and the access-log lines."""

    def __init__(self, sidecar):
        self.sidecar = sidecar
        deadline = time.monotonic() + 10
        match = None
        while match is None and time.monotonic() < deadline:
            match = re.search(r'admin="?(127\.0\.0\.1:\d+)', sidecar.log_path.read_text(errors="replace"))
            time.sleep(0.02)
        assert match, "no admin address in the log:\n" + sidecar.log_tail()
        self.admin = match.group(1)

    def counts(self) -> dict[str, float]:
        """`code` → calls, for protocol grpc."""
        with urllib.request.urlopen(f"http://{self.admin}/metrics", timeout=5) as response:
            text = response.read().decode()
        return {code: float(value) for code, value in
                re.findall(r'^fleet_token_proxy_requests_total\{protocol="grpc",code="([^"]*)"\} (\S+)$', text, re.M)}

    def wait_for_counts(self, expected: dict[str, float], timeout: float = 5.0) -> dict[str, float]:
        """The counts once they are `expected` (a call its client left is counted when the
        sidecar notices), or as they are after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            counts = self.counts()
            if counts == expected or time.monotonic() >= deadline:
                return counts
            time.sleep(0.05)

    def access_log_statuses(self) -> list[str]:
        lines = [line for line in self.sidecar.log_path.read_text(errors="replace").splitlines()
                 if "fleet-token-proxy.access: call" in line]
        return sorted(match.group(1) for line in lines for match in [re.search(r"\bstatus=(\S+)", line)] if match)


@pytest.fixture
def recorded(sidecar_factory):
    def start(**options) -> Recorded:
        extra = ["--access-log", "--admin-listen", "127.0.0.1:0", *options.pop("extra_args", ())]
        return Recorded(sidecar_factory(extra_args=extra, **options))

    return start


@pytest.fixture
def refusing_port():
    """A loopback port that refuses connections, held for the test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def _expect_recorded(record: Recorded, *codes: str) -> None:
    """The metrics count exactly `codes` for protocol grpc, and the access log says the same."""
    expected = {code: float(codes.count(code)) for code in codes}
    assert record.wait_for_counts(expected) == expected
    assert record.access_log_statuses() == sorted(codes)


def _status_of(channel: grpc.Channel, vehicle: Entity) -> grpc.StatusCode:
    """The status the official client reports for a GetVehicle call of `vehicle`."""
    try:
        official_clients(channel).vehicles.get_vehicle(fe.GetVehicleRequest(name=vehicle.resource_name()), retry=None, timeout=10)
    except api_exceptions.GoogleAPICallError as error:
        return error.grpc_status_code
    return grpc.StatusCode.OK


def test_fleet_engines_status_is_counted_as_the_client_got_it(recorded, fleet_engine, new_id):
    record = recorded()
    with grpc.insecure_channel(record.sidecar.address) as channel:
        assert _status_of(channel, Entity(PROVIDER_ID, VEHICLE, new_id())) == grpc.StatusCode.OK
        assert _status_of(channel, Entity(PROVIDER_ID, VEHICLE, new_id("fail-notfound-"))) == grpc.StatusCode.NOT_FOUND

    _expect_recorded(record, "0", "5")


def test_an_unreachable_fleet_engine_is_counted_unavailable(recorded, new_id, refusing_port):
    record = recorded(upstream=f"http://127.0.0.1:{refusing_port}")
    with grpc.insecure_channel(record.sidecar.address) as channel:
        assert _status_of(channel, Entity(PROVIDER_ID, VEHICLE, new_id())) == grpc.StatusCode.UNAVAILABLE

    _expect_recorded(record, "14")


def test_a_token_the_provider_refuses_is_counted_permission_denied(recorded, provider, new_id):
    record = recorded()
    provider.status = 403
    with grpc.insecure_channel(record.sidecar.address) as channel:
        assert _status_of(channel, Entity(PROVIDER_ID, VEHICLE, new_id())) == grpc.StatusCode.PERMISSION_DENIED

    _expect_recorded(record, "7")


def test_a_call_its_client_cancelled_is_counted_cancelled(recorded, fleet_engine, new_id):
    record = recorded()
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id("slow-"))
    with grpc.insecure_channel(record.sidecar.address) as channel:
        stub = official_clients(channel).vehicles.transport.get_vehicle
        future = stub.future(fe.GetVehicleRequest(name=vehicle.resource_name()))
        time.sleep(1.0)  # forwarded by now; the stand-in holds it
        assert future.cancel()
        assert fleet_engine.wait_for_records(timeout=4, entity_id=vehicle.id), "the call never reached Fleet Engine"

    _expect_recorded(record, "cancelled")
