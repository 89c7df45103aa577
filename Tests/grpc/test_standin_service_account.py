"""`fleet-token-proxy stand-in service-account`: the throwaway key file and JWKS that scripts/bench
signing runs the sidecar with (docs/CONTRACT.md §4a). The key file is a secret (mode 0600), the
JWKS holds its public key under its `private_key_id`, and a token the sidecar signs with the key
is accepted by a Fleet Engine that trusts that JWKS for that account alone.
"""
from __future__ import annotations

import json
import stat
import subprocess

import grpc
from google.maps import fleetengine_v1 as fe

from conftest import PROVIDER_ID, official_clients
from fleet_jwt import load_jwks
from standin_fleet_engine import ACCEPTED
from test_official_clients import _entity


def test_its_key_signs_calls_the_jwks_verifies(proxy_binary, sidecar_factory, fleet_engine, tmp_path, new_id):
    out = tmp_path / "account"
    printed = subprocess.run([str(proxy_binary), "stand-in", "service-account", "--out", str(out), "--project", PROVIDER_ID],
                             check=True, capture_output=True, text=True, timeout=30).stdout
    account = f"fleet-signer@{PROVIDER_ID}.iam.gserviceaccount.com"
    assert printed == f"key-file {out}/key.json\njwks {out}/{account}.json\n"
    key_file = out / "key.json"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    key = json.loads(key_file.read_text())
    assert (key["type"], key["client_email"]) == ("service_account", account)
    [(kid, public_key)] = load_jwks((out / f"{account}.json").read_text())
    assert kid == key["private_key_id"]

    fleet_engine.verifier.add_key(kid, public_key, account)
    sidecar = sidecar_factory(extra_args=("--signer", f"vehicle=key-file:{key_file}"))
    channel = grpc.insecure_channel(sidecar.address)
    try:
        entity = _entity("vehicle", new_id)
        official_clients(channel).vehicles.get_vehicle(fe.GetVehicleRequest(name=entity.resource_name()), retry=None, timeout=10)
        assert [r.outcome for r in fleet_engine.records(entity_id=entity.id)] == [ACCEPTED]
    finally:
        channel.close()
