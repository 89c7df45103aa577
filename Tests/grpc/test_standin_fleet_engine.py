"""The stand-in Fleet Engine refuses what Fleet Engine refuses.

The sidecar tests pass only if the stand-in accepts each call; these show that it would not
accept a wrong, stale or foreign token, so a sidecar that attached one would be caught. They
also pin docs/CONTRACT.md §3's field numbers against the published protos.
"""
from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request

import grpc
import pytest
from google.api_core import exceptions as api_exceptions
from google.maps import fleetengine_v1 as fe

from conftest import PROVIDER_ID, official_clients
from fleet_entities import VEHICLE, Entity
from fleet_jwt import SigningKey, claims_for
from standin_fleet_engine import ACCEPTED, INVALID, METHODS, REJECTED, UNKNOWN_METHOD, StandInFleetEngine

VEHICLE_ONE = Entity(PROVIDER_ID, VEHICLE, "vehicle-one")


@pytest.fixture(scope="module")
def engine(signing_key):
    """A stand-in of this module's own, so the counts below are exact."""
    engine = StandInFleetEngine([(signing_key.kid, signing_key.public_key)]).start()
    yield engine
    engine.stop()


@pytest.fixture
def vehicles(engine):
    engine.reset()
    with grpc.insecure_channel(engine.address) as channel:
        yield official_clients(channel).vehicles


def _get(vehicles, entity: Entity, metadata):
    return vehicles.get_vehicle(fe.GetVehicleRequest(name=entity.resource_name()), metadata=metadata, retry=None, timeout=10)


def _bearer(token: str):
    return [("authorization", f"Bearer {token}")]


def _status(call) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(api_exceptions.GoogleAPICallError) as raised:
        call()
    return raised.value.grpc_status_code, raised.value.message


def test_accepts_the_entitys_token(vehicles, engine, signing_key):
    answer = _get(vehicles, VEHICLE_ONE, _bearer(signing_key.mint_for(VEHICLE_ONE)))

    assert answer.name == VEHICLE_ONE.resource_name()
    assert engine.counts() == {("VehicleService/GetVehicle", ACCEPTED): 1}


def _claims(**changes):
    claims = claims_for(VEHICLE_ONE)
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def _other_key_same_kid(signing_key):
    other = SigningKey.generate()
    other.kid = signing_key.kid
    return other


UNAUTHENTICATED_CASES = {
    "no-token": lambda key: [],
    "not-bearer": lambda key: [("authorization", "Basic dXNlcjpwYXNz")],
    "two-tokens": lambda key: _bearer(key.mint_for(VEHICLE_ONE)) * 2,
    "not-a-jwt": lambda key: _bearer("not.a-jwt"),
    "alg-none": lambda key: _bearer(key.mint(_claims(), header={"alg": "none", "typ": "JWT", "kid": key.kid})),
    "unknown-kid": lambda key: _bearer(key.mint(_claims(), header={"alg": "RS256", "typ": "JWT", "kid": "someone-else"})),
    "bad-signature": lambda key: _bearer(_other_key_same_kid(key).mint(_claims())),
    "wrong-audience": lambda key: _bearer(key.mint(_claims(aud="https://oauth2.googleapis.com/token"))),
    "sub-not-iss": lambda key: _bearer(key.mint(_claims(sub="someone@example.com"))),
    "expired": lambda key: _bearer(key.mint(_claims(iat=int(time.time()) - 1000, exp=int(time.time()) - 10))),
    "issued-20-min-ahead": lambda key: _bearer(key.mint(_claims(iat=int(time.time()) + 1200, exp=int(time.time()) + 1500))),
    "lives-2-hours": lambda key: _bearer(key.mint(_claims(exp=int(time.time()) + 7200))),
    "no-exp": lambda key: _bearer(key.mint(_claims(exp=None))),
}


@pytest.mark.parametrize("case", UNAUTHENTICATED_CASES)
def test_refuses_an_unusable_token_as_unauthenticated(vehicles, engine, signing_key, case):
    code, message = _status(lambda: _get(vehicles, VEHICLE_ONE, UNAUTHENTICATED_CASES[case](signing_key)))

    assert code == grpc.StatusCode.UNAUTHENTICATED, message
    assert engine.counts() == {("VehicleService/GetVehicle", REJECTED): 1}


PERMISSION_CASES = {
    "another-vehicle": (VEHICLE_ONE, lambda key: key.mint_for(Entity(PROVIDER_ID, VEHICLE, "vehicle-two"))),
    "a-trip-of-the-same-id": (VEHICLE_ONE, lambda key: key.mint_for(Entity(PROVIDER_ID, "trip", VEHICLE_ONE.id))),
    "another-project": (VEHICLE_ONE, lambda key: key.mint_for(Entity("other-project", VEHICLE, VEHICLE_ONE.id))),
    "a-vehicle-token-for-the-fleet": (Entity.fleet(PROVIDER_ID), lambda key: key.mint_for(VEHICLE_ONE)),
}


@pytest.mark.parametrize("case", PERMISSION_CASES)
def test_refuses_a_token_for_something_else_as_permission_denied(engine, signing_key, case):
    entity, mint = PERMISSION_CASES[case]
    engine.reset()
    with grpc.insecure_channel(engine.address) as channel:
        vehicles = official_clients(channel).vehicles
        if entity.type == VEHICLE:
            call = lambda: _get(vehicles, entity, _bearer(mint(signing_key)))  # noqa: E731
        else:
            call = lambda: list(vehicles.list_vehicles(  # noqa: E731
                fe.ListVehiclesRequest(parent=entity.resource_name()), metadata=_bearer(mint(signing_key)), retry=None, timeout=10))
        code, message = _status(call)

    assert code == grpc.StatusCode.PERMISSION_DENIED, message
    assert [r.outcome for r in engine.records()] == [REJECTED]


def test_tolerates_ten_minutes_of_clock_skew(vehicles, signing_key):
    now = int(time.time())
    token = signing_key.mint(_claims(iat=now + 300, exp=now + 1200))

    assert _get(vehicles, VEHICLE_ONE, _bearer(token)).name == VEHICLE_ONE.resource_name()


def test_a_fleet_token_covers_every_vehicle(vehicles, signing_key):
    token = signing_key.mint_for(Entity.fleet(PROVIDER_ID))

    assert _get(vehicles, VEHICLE_ONE, _bearer(token)).name == VEHICLE_ONE.resource_name()


def test_a_request_naming_no_valid_entity_is_invalid_argument(vehicles, engine, signing_key):
    token = _bearer(signing_key.mint_for(VEHICLE_ONE))
    for name in ("", "vehicles/vehicle-one", f"providers/{PROVIDER_ID}/trips/x", f"providers/{PROVIDER_ID}/vehicles/a:b"):
        code, _ = _status(lambda: vehicles.get_vehicle(fe.GetVehicleRequest(name=name), metadata=token, retry=None, timeout=10))
        assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert engine.counts() == {("VehicleService/GetVehicle", INVALID): 4}


def test_an_unknown_method_is_unimplemented_and_counted(engine):
    engine.reset()
    with grpc.insecure_channel(engine.address) as channel:
        with pytest.raises(grpc.RpcError) as raised:
            channel.unary_unary("/maps.fleetengine.v1.VehicleService/UpdateVehicleLocation")(b"", timeout=10)
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert [(r.method, r.outcome) for r in engine.records()] == [("/maps.fleetengine.v1.VehicleService/UpdateVehicleLocation", UNKNOWN_METHOD)]


def test_counts_are_kept_per_method(engine, signing_key):
    engine.reset()
    trip = Entity(PROVIDER_ID, "trip", "trip-one")
    with grpc.insecure_channel(engine.address) as channel:
        clients = official_clients(channel)
        for _ in range(3):
            _get(clients.vehicles, VEHICLE_ONE, _bearer(signing_key.mint_for(VEHICLE_ONE)))
        clients.trips.get_trip(fe.GetTripRequest(name=trip.resource_name()), metadata=_bearer(signing_key.mint_for(trip)), retry=None, timeout=10)
        _status(lambda: clients.trips.get_trip(fe.GetTripRequest(name=trip.resource_name()),
                                              metadata=_bearer(signing_key.mint_for(VEHICLE_ONE)), retry=None, timeout=10))

    assert engine.accepted("VehicleService/GetVehicle") == 3
    assert (engine.accepted("TripService/GetTrip"), engine.rejected("TripService/GetTrip")) == (1, 1)


def test_tokens_from_the_swift_standin_provider_are_accepted(fleet_engine, swift_provider):
    """The Swift `stand-in provider` (the demo's) and this stand-in agree on what a token is."""
    vehicle, other = Entity(PROVIDER_ID, VEHICLE, "swift-minted"), Entity(PROVIDER_ID, VEHICLE, "swift-other")

    def fetch(entity):
        url = swift_provider.format(provider=entity.provider, type=entity.type, id=urllib.parse.quote(entity.id, safe=""))
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)["token"]

    with grpc.insecure_channel(fleet_engine.address) as channel:
        vehicles = official_clients(channel).vehicles
        assert _get(vehicles, vehicle, _bearer(fetch(vehicle))).name == vehicle.resource_name()
        code, _ = _status(lambda: _get(vehicles, vehicle, _bearer(fetch(other))))
    assert code == grpc.StatusCode.PERMISSION_DENIED


# docs/CONTRACT.md §3's gRPC table: the field (and nested path) that names the entity, by field number.
CONTRACT_ENTITY_FIELDS = {
    "VehicleService/GetVehicle": [("name", 3)],
    "VehicleService/UpdateVehicle": [("name", 3)],
    "VehicleService/UpdateVehicleAttributes": [("name", 3)],
    "VehicleService/DeleteVehicle": [("name", 2)],
    "VehicleService/CreateVehicle": [("vehicle_id", 4), ("parent", 3)],
    "TripService/GetTrip": [("name", 3)],
    "TripService/UpdateTrip": [("name", 3)],
    "TripService/DeleteTrip": [("name", 2)],
    "TripService/CreateTrip": [("trip_id", 5), ("parent", 3)],
    "DeliveryService/GetDeliveryVehicle": [("name", 3)],
    "DeliveryService/DeleteDeliveryVehicle": [("name", 2)],
    "DeliveryService/CreateDeliveryVehicle": [("delivery_vehicle_id", 4), ("parent", 3)],
    "DeliveryService/UpdateDeliveryVehicle": [("delivery_vehicle", 3), ("delivery_vehicle.name", 1)],
    "DeliveryService/GetTask": [("name", 3)],
    "DeliveryService/DeleteTask": [("name", 2)],
    "DeliveryService/CreateTask": [("task_id", 5), ("parent", 3)],
    "DeliveryService/UpdateTask": [("task", 3), ("task.name", 1)],
    "DeliveryService/GetTaskTrackingInfo": [("name", 3)],
    "VehicleService/ListVehicles": [("parent", 1)],
    "VehicleService/SearchVehicles": [("parent", 3)],
    "TripService/SearchTrips": [("parent", 3)],
    "TripService/ReportBillableTrip": [("name", 2)],
    "DeliveryService/ListDeliveryVehicles": [("parent", 3)],
    "DeliveryService/ListTasks": [("parent", 3)],
    "DeliveryService/BatchCreateTasks": [("parent", 3)],
}


@pytest.mark.parametrize("method", METHODS, ids=lambda m: m.short_name)
def test_spec_field_numbers_match_the_published_protos(method):
    for path, number in CONTRACT_ENTITY_FIELDS[method.short_name]:
        descriptor = method.request_type.pb().DESCRIPTOR
        *outer, last = path.split(".")
        for field in outer:
            descriptor = descriptor.fields_by_name[field].message_type
        assert descriptor.fields_by_name[last].number == number, f"{method.short_name} {path}"
    assert method.path.startswith(("/maps.fleetengine.v1.", "/maps.fleetengine.delivery.v1."))
    assert method.request_type.pb().DESCRIPTOR.full_name.startswith(("maps.fleetengine.v1.", "maps.fleetengine.delivery.v1."))
