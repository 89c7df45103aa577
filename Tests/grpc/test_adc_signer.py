"""The official Fleet Engine Python clients through a sidecar whose tokens come from Application
Default Credentials (docs/CONTRACT.md §4a), unmodified: `--signer iam:EMAIL` (each entity's
claims signed by IAM signJwt) and `--signer adc` (the access token itself), with the stand-in
Google (`fleet-token-proxy stand-in google`) as the token endpoint and IAM, and its service
account's key file as GOOGLE_APPLICATION_CREDENTIALS. The stand-in Fleet Engine verifies every
token with that account's public keys: 0 rejected, and the token provider never asked.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time

import grpc
import pytest

from conftest import PROVIDER_ID, official_clients, Route
from fleet_jwt import load_jwks
from standin_fleet_engine import ACCEPTED, REJECTED
from test_official_clients import CASES, _entity

ACCOUNT = f"fleet-admin@{PROVIDER_ID}.iam.gserviceaccount.com"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def google(proxy_binary, fleet_engine, tmp_path_factory):
    """The stand-in Google on its own port; Fleet Engine knows its account's keys."""
    folder = tmp_path_factory.mktemp("google")
    address = f"127.0.0.1:{_free_port()}"
    jwks = folder / f"{ACCOUNT}.json"
    process = subprocess.Popen(
        [str(proxy_binary), "stand-in", "google", "--listen", address, "--project", PROVIDER_ID,
         "--key-file-out", str(folder / "adc.json"), "--jwks-out", str(jwks)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert "listening" in process.stderr.readline() + process.stderr.readline()
        for kid, key in load_jwks(jwks.read_text()):
            fleet_engine.verifier.add_key(kid, key, ACCOUNT)
        yield address, folder / "adc.json"
    finally:
        process.terminate()
        process.wait(timeout=5)


def _route(sidecar_factory, provider, google, signer: str):
    address, key_file = google
    os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = str(key_file)
    try:
        sidecar = sidecar_factory(extra_args=("--signer", signer, "--iam-endpoint", f"http://{address}"))
    finally:
        del os.environ["GOOGLE_APPLICATION_CREDENTIALS"]
    channel = grpc.insecure_channel(sidecar.address)
    return Route("sidecar", sidecar.address, channel, official_clients(channel), provider), channel


@pytest.fixture(scope="module", params=[f"iam:{ACCOUNT}", "adc"], ids=["iam", "adc"])
def adc_route(request, sidecar_factory, provider, google):
    route, channel = _route(sidecar_factory, provider, google, request.param)
    try:
        yield request.param, route
    finally:
        channel.close()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_method_is_accepted_with_a_token_from_adc(adc_route, fleet_engine, provider, new_id, case):
    _, route = adc_route
    entity = _entity(case.entity_type, new_id)
    tag = new_id("adc-")
    fetched_before = provider.fetches(entity)

    answer = case.call(route.clients, entity, route.options(entity, tag=tag))

    assert case.view(answer) == case.expected(entity)
    [seen] = fleet_engine.records(tag=tag)
    assert (seen.method, seen.outcome, seen.code) == (case.method, ACCEPTED, grpc.StatusCode.OK), seen.detail
    assert seen.authorization_count == 1
    assert provider.fetches(entity) == fetched_before, "the token came from ADC, not the provider"


def test_no_call_with_a_token_from_adc_was_rejected(adc_route, fleet_engine, new_id):
    """Run after the cases above (same module): Fleet Engine refused none of them."""
    _, route = adc_route
    entity = _entity(CASES[0].entity_type, new_id)
    tag = new_id("adc-")
    CASES[1].call(route.clients, entity, route.options(entity, tag=tag))
    calls = [r for r in fleet_engine.records() if any(k == "x-test-call" and v.startswith("adc-") for k, v in r.metadata)]
    assert len(calls) >= len(CASES) + 1
    assert [r for r in calls if r.outcome == REJECTED] == []
