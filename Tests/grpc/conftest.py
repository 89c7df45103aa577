"""Fixtures for the gRPC integration tests.

The pieces, all on loopback:
  provider      a Python stand-in token provider (standin_provider.py) that counts fetches
  fleet_engine  the stand-in Fleet Engine (standin_fleet_engine.py): gRPC and REST on one address
  sidecar       `fleet-token-proxy serve` between them (FLEET_TOKEN_PROXY_BIN or .build/debug)
  route         parametrized "direct" (the test fetches the token itself and calls the stand-in
                Fleet Engine) and "sidecar" (the client sends no token; the sidecar attaches it).
                Direct mode validates the stand-ins and the tests themselves without the sidecar.

Tests that go through the sidecar carry the `sidecar` marker; `-m "not sidecar"` runs the rest.
"""
from __future__ import annotations

import dataclasses
import re
import subprocess
import time
import uuid
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest
from google.maps import fleetengine_delivery_v1 as fd
from google.maps import fleetengine_v1 as fe
from google.maps.fleetengine_delivery_v1.services.delivery_service.transports import DeliveryServiceGrpcTransport
from google.maps.fleetengine_v1.services.trip_service.transports import TripServiceGrpcTransport
from google.maps.fleetengine_v1.services.vehicle_service.transports import VehicleServiceGrpcTransport

from fleet_entities import Entity
from fleet_jwt import SigningKey, load_public_key_pem
from sidecar_process import SidecarProcess, find_binary
from standin_fleet_engine import StandInFleetEngine
from standin_provider import StandInProvider
from tls_pki import make_server_pki

PROVIDER_ID = "standin-project"

# Sidecars alive now, so a failing test's report can show their logs.
_LIVE_SIDECARS: list[SidecarProcess] = []


def official_clients(channel: grpc.Channel) -> SimpleNamespace:
    """The three official clients on one channel, as an application would build them to talk to
    an endpoint of its choice over an insecure channel."""
    return SimpleNamespace(
        vehicles=fe.VehicleServiceClient(transport=VehicleServiceGrpcTransport(channel=channel)),
        trips=fe.TripServiceClient(transport=TripServiceGrpcTransport(channel=channel)),
        delivery=fd.DeliveryServiceClient(transport=DeliveryServiceGrpcTransport(channel=channel)),
    )


@dataclasses.dataclass
class Route:
    """How a test's calls reach the stand-in Fleet Engine."""

    name: str  # "direct" or "sidecar"
    address: str
    channel: grpc.Channel
    clients: SimpleNamespace
    provider: StandInProvider

    @property
    def direct(self) -> bool:
        return self.name == "direct"

    def options(self, entity: Entity, *, tag: str | None = None, timeout: float = 10.0, metadata=()) -> dict:
        """Keyword arguments for an official client method: no retries (a test must see the
        first answer), a deadline, the test's metadata, and in direct mode the entity's token."""
        sent = list(metadata)
        if tag is not None:
            sent.append(("x-test-call", tag))
        if self.direct:
            sent.append(("authorization", "Bearer " + self.provider.fetch_token(entity)))
        return {"metadata": sent, "retry": None, "timeout": timeout}


# -- markers and reports ---------------------------------------------------------------------


def pytest_collection_modifyitems(config, items):
    for item in items:
        if {"sidecar", "sidecar_factory", "sidecar_route"} & set(item.fixturenames):
            item.add_marker(pytest.mark.sidecar)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and "sidecar" in item.keywords:
        for sidecar in _LIVE_SIDECARS:
            state = "running" if sidecar.running else f"EXITED with {sidecar.process.returncode}"
            report.sections.append((f"sidecar {sidecar.address} ({state}) log", sidecar.log_tail()))


# -- the pieces ------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def proxy_binary() -> Path:
    binary = find_binary()
    if not binary.is_file():
        pytest.fail(f"no sidecar binary at {binary}: run `swift build`, or set FLEET_TOKEN_PROXY_BIN")
    return binary


@pytest.fixture(scope="session")
def signing_key() -> SigningKey:
    return SigningKey.generate()


@pytest.fixture(scope="session")
def provider(signing_key):
    provider = StandInProvider(signing_key).start()
    yield provider
    provider.stop()


@pytest.fixture(autouse=True)
def _provider_behaves_normally_after_each_test(provider):
    yield
    provider.reset()


@pytest.fixture(scope="session")
def fleet_engine(signing_key):
    engine = StandInFleetEngine([(signing_key.kid, signing_key.public_key)], rest=True).start()
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def pki(tmp_path_factory):
    return make_server_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="session")
def tls_fleet_engine(signing_key, pki):
    """A second stand-in Fleet Engine that speaks gRPC only over TLS (ALPN h2), with a
    certificate from the test CA."""
    engine = StandInFleetEngine([(signing_key.kid, signing_key.public_key)], tls=(pki.certificate_pem, pki.key_pem)).start()
    yield engine
    engine.stop()


@pytest.fixture(scope="session")
def sidecar_factory(proxy_binary, provider, fleet_engine, tmp_path_factory):
    """Starts sidecars; by default between `provider` and `fleet_engine` (h2c upstream)."""
    started: list[SidecarProcess] = []

    def start(*, upstream: str | None = None, provider_url: str | None = None, extra_args=()) -> SidecarProcess:
        sidecar = SidecarProcess(
            proxy_binary,
            upstream=upstream or f"http://{fleet_engine.address}",
            provider_url=provider_url or provider.url_template,
            log_path=tmp_path_factory.mktemp("sidecar") / "sidecar.log",
            extra_args=tuple(extra_args),
        )
        started.append(sidecar)
        _LIVE_SIDECARS.append(sidecar)
        return sidecar.start()

    yield start
    for sidecar in started:
        sidecar.stop()
        _LIVE_SIDECARS.remove(sidecar)


@pytest.fixture(scope="session")
def sidecar(sidecar_factory) -> SidecarProcess:
    return sidecar_factory()


@pytest.fixture(autouse=True)
def _sidecars_survive_each_test():
    yield
    dead = [s for s in _LIVE_SIDECARS if not s.running and not s.expected_exit]
    assert not dead, "a sidecar exited during the test: " + "; ".join(
        f"{s.address} status {s.process.returncode}:\n{s.log_tail()}" for s in dead)


def _route(name: str, address: str, provider: StandInProvider):
    channel = grpc.insecure_channel(address)
    try:
        yield Route(name, address, channel, official_clients(channel), provider)
    finally:
        channel.close()


@pytest.fixture(params=["direct", pytest.param("sidecar", marks=pytest.mark.sidecar)])
def route(request, provider, fleet_engine):
    """Both ways to reach the stand-in Fleet Engine; see the module docstring."""
    if request.param == "direct":
        address = fleet_engine.address
    else:
        address = request.getfixturevalue("sidecar").address
    yield from _route(request.param, address, provider)


@pytest.fixture
def sidecar_route(sidecar, provider):
    """Through the shared sidecar only (for what only the sidecar does)."""
    yield from _route("sidecar", sidecar.address, provider)


@pytest.fixture
def new_id():
    """Unique entity ids, so each test's entities are cold in the sidecar's cache."""

    def make(prefix: str = "") -> str:
        return f"{prefix}{uuid.uuid4().hex[:12]}"

    return make


@pytest.fixture(scope="session")
def swift_provider(proxy_binary, fleet_engine, tmp_path_factory):
    """The Swift `fleet-token-proxy stand-in provider`; the stand-in Fleet Engine trusts its key.
    Yields its URL template."""
    directory = tmp_path_factory.mktemp("swift-provider")
    key_file, log_file = directory / "public.pem", directory / "provider.log"
    with open(log_file, "wb") as log:
        process = subprocess.Popen(
            [str(proxy_binary), "stand-in", "provider", "--listen", "127.0.0.1:0", "--public-key-out", str(key_file)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 15
        address = None
        while address is None and time.monotonic() < deadline and process.poll() is None:
            match = re.search(r"listening on (127\.0\.0\.1:\d+)", log_file.read_text(errors="replace"))
            address = match.group(1) if match else None
            time.sleep(0.02)
        if address is None or not key_file.exists():
            pytest.fail(f"the Swift stand-in provider did not start:\n{log_file.read_text(errors='replace')}")
        fleet_engine.verifier.add_key(None, load_public_key_pem(key_file.read_bytes()))
        yield f"http://{address}/token/{{provider}}/{{type}}/{{id}}"
    finally:
        process.terminate()
        process.wait(timeout=10)
