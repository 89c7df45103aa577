"""The official Fleet Engine Python clients through a sidecar that signs every token itself
(`--signer key-file:PATH`, docs/CONTRACT.md §4a), unmodified, against the stand-in Fleet Engine
that verifies each RS256 signature with the public key of the service account named in `iss`
and `kid`, as Fleet Engine does. Every method of docs/CONTRACT.md §3 must be accepted: 0
rejected, and the token provider never asked.
"""
from __future__ import annotations

import json
import os

import grpc
import pytest
from google.api_core import exceptions as api_exceptions
from google.maps import fleetengine_v1 as fe

from conftest import PROVIDER_ID, official_clients, Route
from fleet_jwt import SigningKey, service_account_key_file
from standin_fleet_engine import ACCEPTED, REJECTED
from test_official_clients import CASES, _entity

ACCOUNT = f"fleet-signer@{PROVIDER_ID}.iam.gserviceaccount.com"


@pytest.fixture(scope="module")
def signing_account(fleet_engine):
    """A service account whose key Fleet Engine knows, for that account only."""
    key = SigningKey.generate()
    fleet_engine.verifier.add_key(key.kid, key.public_key, ACCOUNT)
    return key


@pytest.fixture(scope="module")
def key_file_route(sidecar_factory, signing_account, provider, tmp_path_factory):
    path = tmp_path_factory.mktemp("signer") / "key.json"
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(service_account_key_file(signing_account, ACCOUNT), file)
    # A --signer without TYPES takes every type: the --provider-url the factory passes is unused.
    sidecar = sidecar_factory(extra_args=("--signer", f"key-file:{path}", "--signed-token-lifetime", "900"))
    channel = grpc.insecure_channel(sidecar.address)
    try:
        yield Route("sidecar", sidecar.address, channel, official_clients(channel), provider)
    finally:
        channel.close()


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_method_is_accepted_with_a_locally_signed_token(key_file_route, fleet_engine, provider, new_id, case):
    entity = _entity(case.entity_type, new_id)
    tag = new_id("signed-")
    # The fleet entity is the same in every test of the session: compare with what it had.
    fetched_before = provider.fetches(entity)

    answer = case.call(key_file_route.clients, entity, key_file_route.options(entity, tag=tag))

    assert case.view(answer) == case.expected(entity)
    [seen] = fleet_engine.records(tag=tag)
    assert (seen.method, seen.outcome, seen.code) == (case.method, ACCEPTED, grpc.StatusCode.OK), seen.detail
    assert seen.entity == entity
    assert seen.authorization_count == 1
    assert provider.fetches(entity) == fetched_before, "the token was signed by the sidecar, not fetched"


def test_no_call_through_the_signing_sidecar_was_rejected(key_file_route, fleet_engine, new_id):
    """Run after the cases above (same module): Fleet Engine refused none of the signed tokens."""
    entity = _entity(CASES[0].entity_type, new_id)
    tag = new_id("signed-")
    CASES[1].call(key_file_route.clients, entity, key_file_route.options(entity, tag=tag))
    signed = [r for r in fleet_engine.records() if any(k == "x-test-call" and v.startswith("signed-") for k, v in r.metadata)]
    assert len(signed) >= len(CASES) + 1
    assert [r for r in signed if r.outcome == REJECTED] == []


def test_a_key_fleet_engine_does_not_know_for_the_account_is_unauthenticated(sidecar_factory, fleet_engine, tmp_path, new_id):
    unknown = SigningKey.generate()
    path = tmp_path / "key.json"
    path.write_text(json.dumps(service_account_key_file(unknown, ACCOUNT)))
    path.chmod(0o600)
    sidecar = sidecar_factory(extra_args=("--signer", f"vehicle=key-file:{path}"))
    channel = grpc.insecure_channel(sidecar.address)
    try:
        clients = official_clients(channel)
        entity = _entity("vehicle", new_id)
        with pytest.raises(api_exceptions.Unauthenticated):
            clients.vehicles.get_vehicle(fe.GetVehicleRequest(name=entity.resource_name()), retry=None, timeout=10)
        assert {r.reason for r in fleet_engine.records(entity_id=entity.id)} == {"unknown_key_id"}
    finally:
        channel.close()
