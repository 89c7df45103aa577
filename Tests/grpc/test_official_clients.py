"""The official Fleet Engine Python clients through the sidecar, unmodified (issue 3).

The clients (`google-maps-fleetengine`, `google-maps-fleetengine-delivery` from PyPI) speak gRPC
only. Pointed at the sidecar with an insecure channel, they send no token; the sidecar works out
the entity from the request message (docs/CONTRACT.md §3), attaches that entity's JWT and relays the call
over h2c to a stand-in Fleet Engine that checks the token's claims against the entity, as Fleet
Engine does. Each test that can also runs "direct" (the test fetches the token itself and calls
the stand-in), which checks the stand-ins and the test before the sidecar is involved.

Running the tests (scripts/test does all of this after `swift test`):

    swift build
    python3 -m venv .venv && .venv/bin/pip install -r Tests/grpc/requirements.txt
    .venv/bin/python -m pytest -q Tests/grpc                    # everything
    .venv/bin/python -m pytest -q Tests/grpc -m "not sidecar"   # the stand-ins and tests alone

Trying it by hand (the issue's "done when"): a stand-in provider, a stand-in Fleet Engine that
trusts its key, the sidecar between them, and one `python -c` with the official client:

    .build/debug/fleet-token-proxy stand-in provider --listen 127.0.0.1:4190 --public-key-out /tmp/fe-key.pem &
    sleep 1; .venv/bin/python Tests/grpc/standin_fleet_engine.py --listen 127.0.0.1:4199 --public-key /tmp/fe-key.pem &
    .build/debug/fleet-token-proxy serve --listen 127.0.0.1:4180 --upstream http://127.0.0.1:4199 \\
        --provider-url 'http://127.0.0.1:4190/token/{provider}/{type}/{id}' &

    .venv/bin/python -c "import grpc; from google.maps import fleetengine_v1 as fe; from google.maps.fleetengine_v1.services.vehicle_service.transports import VehicleServiceGrpcTransport as T; c = fe.VehicleServiceClient(transport=T(channel=grpc.insecure_channel('127.0.0.1:4180'))); print(c.update_vehicle(fe.UpdateVehicleRequest(name='providers/my-project/vehicles/vehicle-1', vehicle=fe.Vehicle(vehicle_state=fe.VehicleState.ONLINE), update_mask={'paths': ['vehicle_state']})))"

It prints the updated vehicle (`name: "providers/my-project/vehicles/vehicle-1"`,
`vehicle_state: ONLINE`), and the stand-in Fleet Engine prints a line `accepted OK
VehicleService/UpdateVehicle vehicle vehicle-1 of my-project`. Against the real Fleet Engine the
`python -c` line is the same; only the sidecar's `--upstream` (default
https://fleetengine.googleapis.com) and `--provider-url` change.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import os
import socket
import threading
import time
import urllib.request
from typing import Any, Callable

import grpc
import pytest
from google.api_core import exceptions as api_exceptions
from google.maps import fleetengine_delivery_v1 as fd
from google.maps import fleetengine_v1 as fe
from google.protobuf import duration_pb2, field_mask_pb2

from conftest import PROVIDER_ID, official_clients
from fleet_entities import DELIVERY_VEHICLE, FLEET, TASK, TRACKING, TRIP, VEHICLE, Entity
from standin_fleet_engine import ACCEPTED, ONE_MIB

PARENT = f"providers/{PROVIDER_ID}"


# --------------------------------------------------------------------------------------------
# Every method of docs/CONTRACT.md §3, with the official clients
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Case:
    method: str  # the stand-in's name for it: "VehicleService/GetVehicle"
    entity_type: str
    # (clients, entity, options) → the client's answer; `options` are Route.options(entity).
    call: Callable[[Any, Entity, dict], Any]
    # What of the answer is compared, and what it should be for the entity: the stand-in echoes
    # the resource name and the fields the request set.
    view: Callable[[Any], Any]
    expected: Callable[[Entity], Any]

    def __str__(self) -> str:
        return self.method.split("/")[1]


def _mask(*paths):
    return field_mask_pb2.FieldMask(paths=list(paths))


def _listed(collection):
    return f"{PARENT}/{collection}/listed-by-stand-in"


def _new_task(entity_id):
    return fd.Task(type_=fd.Task.Type.PICKUP, state=fd.Task.State.OPEN, tracking_id=f"track-{entity_id}",
                   task_duration=duration_pb2.Duration(seconds=120))


def _name(answer):
    return answer.name


def _resource_name(entity):
    return entity.resource_name()


def _nothing(answer):
    return answer


def _none(entity):
    return None


CASES = [
    # VehicleService
    Case("VehicleService/CreateVehicle", VEHICLE,
         lambda c, e, o: c.vehicles.create_vehicle(fe.CreateVehicleRequest(
             parent=PARENT, vehicle_id=e.id,
             vehicle=fe.Vehicle(vehicle_state=fe.VehicleState.OFFLINE, maximum_capacity=4, supported_trip_types=[fe.TripType.EXCLUSIVE])), **o),
         lambda a: (a.name, a.maximum_capacity), lambda e: (e.resource_name(), 4)),
    Case("VehicleService/GetVehicle", VEHICLE,
         lambda c, e, o: c.vehicles.get_vehicle(fe.GetVehicleRequest(name=e.resource_name()), **o), _name, _resource_name),
    Case("VehicleService/DeleteVehicle", VEHICLE,
         lambda c, e, o: c.vehicles.delete_vehicle(fe.DeleteVehicleRequest(name=e.resource_name()), **o), _nothing, _none),
    Case("VehicleService/UpdateVehicle", VEHICLE,
         lambda c, e, o: c.vehicles.update_vehicle(fe.UpdateVehicleRequest(
             name=e.resource_name(), vehicle=fe.Vehicle(vehicle_state=fe.VehicleState.ONLINE), update_mask=_mask("vehicle_state")), **o),
         lambda a: (a.name, a.vehicle_state), lambda e: (e.resource_name(), fe.VehicleState.ONLINE)),
    Case("VehicleService/UpdateVehicleAttributes", VEHICLE,
         lambda c, e, o: c.vehicles.update_vehicle_attributes(fe.UpdateVehicleAttributesRequest(
             name=e.resource_name(), attributes=[fe.VehicleAttribute(key="colour", value="blue")]), **o),
         lambda a: [(x.key, x.value) for x in a.attributes], lambda e: [("colour", "blue")]),
    Case("VehicleService/ListVehicles", FLEET,
         lambda c, e, o: list(c.vehicles.list_vehicles(fe.ListVehiclesRequest(parent=PARENT, page_size=10), **o)),
         lambda a: [v.name for v in a], lambda e: [_listed("vehicles")]),
    Case("VehicleService/SearchVehicles", FLEET,
         lambda c, e, o: c.vehicles.search_vehicles(fe.SearchVehiclesRequest(
             parent=PARENT, pickup_radius_meters=400, count=5, minimum_capacity=1, trip_types=[fe.TripType.EXCLUSIVE],
             order_by=fe.SearchVehiclesRequest.VehicleMatchOrder.PICKUP_POINT_ETA), **o),
         lambda a: [m.vehicle.name for m in a.matches], lambda e: [_listed("vehicles")]),
    # TripService
    Case("TripService/CreateTrip", TRIP,
         lambda c, e, o: c.trips.create_trip(fe.CreateTripRequest(
             parent=PARENT, trip_id=e.id, trip=fe.Trip(trip_type=fe.TripType.EXCLUSIVE, number_of_passengers=2)), **o),
         lambda a: (a.name, a.number_of_passengers), lambda e: (e.resource_name(), 2)),
    Case("TripService/GetTrip", TRIP,
         lambda c, e, o: c.trips.get_trip(fe.GetTripRequest(name=e.resource_name()), **o), _name, _resource_name),
    Case("TripService/DeleteTrip", TRIP,
         lambda c, e, o: c.trips.delete_trip(fe.DeleteTripRequest(name=e.resource_name()), **o), _nothing, _none),
    Case("TripService/UpdateTrip", TRIP,
         lambda c, e, o: c.trips.update_trip(fe.UpdateTripRequest(
             name=e.resource_name(), trip=fe.Trip(trip_status=fe.TripStatus.ENROUTE_TO_PICKUP), update_mask=_mask("trip_status")), **o),
         lambda a: (a.name, a.trip_status), lambda e: (e.resource_name(), fe.TripStatus.ENROUTE_TO_PICKUP)),
    Case("TripService/SearchTrips", FLEET,
         lambda c, e, o: list(c.trips.search_trips(fe.SearchTripsRequest(parent=PARENT, vehicle_id="vehicle-7", active_trips_only=True), **o)),
         lambda a: [(t.name, t.vehicle_id) for t in a], lambda e: [(_listed("trips"), "vehicle-7")]),
    Case("TripService/ReportBillableTrip", FLEET,
         lambda c, e, o: c.trips.report_billable_trip(fe.ReportBillableTripRequest(
             name=f"{PARENT}/billableTrips/billable-1", country_code="US", platform=fe.BillingPlatformIdentifier.ANDROID), **o),
         _nothing, _none),
    # DeliveryService
    Case("DeliveryService/CreateDeliveryVehicle", DELIVERY_VEHICLE,
         lambda c, e, o: c.delivery.create_delivery_vehicle(fd.CreateDeliveryVehicleRequest(
             parent=PARENT, delivery_vehicle_id=e.id, delivery_vehicle=fd.DeliveryVehicle(type_=fd.DeliveryVehicle.DeliveryVehicleType.TWO_WHEELER)), **o),
         lambda a: (a.name, a.type_), lambda e: (e.resource_name(), fd.DeliveryVehicle.DeliveryVehicleType.TWO_WHEELER)),
    Case("DeliveryService/GetDeliveryVehicle", DELIVERY_VEHICLE,
         lambda c, e, o: c.delivery.get_delivery_vehicle(fd.GetDeliveryVehicleRequest(name=e.resource_name()), **o), _name, _resource_name),
    Case("DeliveryService/DeleteDeliveryVehicle", DELIVERY_VEHICLE,
         lambda c, e, o: c.delivery.delete_delivery_vehicle(fd.DeleteDeliveryVehicleRequest(name=e.resource_name()), **o), _nothing, _none),
    Case("DeliveryService/UpdateDeliveryVehicle", DELIVERY_VEHICLE,
         lambda c, e, o: c.delivery.update_delivery_vehicle(fd.UpdateDeliveryVehicleRequest(
             delivery_vehicle=fd.DeliveryVehicle(name=e.resource_name(), navigation_status=fd.DeliveryVehicleNavigationStatus.ENROUTE_TO_DESTINATION),
             update_mask=_mask("navigation_status")), **o),
         lambda a: (a.name, a.navigation_status), lambda e: (e.resource_name(), fd.DeliveryVehicleNavigationStatus.ENROUTE_TO_DESTINATION)),
    Case("DeliveryService/ListDeliveryVehicles", FLEET,
         lambda c, e, o: list(c.delivery.list_delivery_vehicles(fd.ListDeliveryVehiclesRequest(parent=PARENT, page_size=10), **o)),
         lambda a: [v.name for v in a], lambda e: [_listed("deliveryVehicles")]),
    Case("DeliveryService/CreateTask", TASK,
         lambda c, e, o: c.delivery.create_task(fd.CreateTaskRequest(parent=PARENT, task_id=e.id, task=_new_task(e.id)), **o),
         lambda a: (a.name, a.tracking_id), lambda e: (e.resource_name(), f"track-{e.id}")),
    Case("DeliveryService/GetTask", TASK,
         lambda c, e, o: c.delivery.get_task(fd.GetTaskRequest(name=e.resource_name()), **o), _name, _resource_name),
    Case("DeliveryService/DeleteTask", TASK,
         lambda c, e, o: c.delivery.delete_task(fd.DeleteTaskRequest(name=e.resource_name()), **o), _nothing, _none),
    Case("DeliveryService/UpdateTask", TASK,
         lambda c, e, o: c.delivery.update_task(fd.UpdateTaskRequest(
             task=fd.Task(name=e.resource_name(), task_outcome=fd.Task.TaskOutcome.SUCCEEDED), update_mask=_mask("task_outcome")), **o),
         lambda a: (a.name, a.task_outcome), lambda e: (e.resource_name(), fd.Task.TaskOutcome.SUCCEEDED)),
    Case("DeliveryService/ListTasks", FLEET,
         lambda c, e, o: list(c.delivery.list_tasks(fd.ListTasksRequest(parent=PARENT, page_size=10, filter="state = OPEN"), **o)),
         lambda a: [t.name for t in a], lambda e: [_listed("tasks")]),
    Case("DeliveryService/BatchCreateTasks", FLEET,
         lambda c, e, o: c.delivery.batch_create_tasks(fd.BatchCreateTasksRequest(parent=PARENT, requests=[
             fd.CreateTaskRequest(parent=PARENT, task_id="batch-a", task=_new_task("batch-a")),
             fd.CreateTaskRequest(parent=PARENT, task_id="batch-b", task=_new_task("batch-b"))]), **o),
         lambda a: [(t.name, t.tracking_id) for t in a.tasks],
         lambda e: [(f"{PARENT}/tasks/batch-a", "track-batch-a"), (f"{PARENT}/tasks/batch-b", "track-batch-b")]),
    Case("DeliveryService/GetTaskTrackingInfo", TRACKING,
         lambda c, e, o: c.delivery.get_task_tracking_info(fd.GetTaskTrackingInfoRequest(name=e.resource_name()), **o),
         lambda a: (a.name, a.tracking_id), lambda e: (e.resource_name(), e.id)),
]


def _entity(entity_type: str, new_id) -> Entity:
    return Entity.fleet(PROVIDER_ID) if entity_type == FLEET else Entity(PROVIDER_ID, entity_type, new_id())


@pytest.mark.parametrize("case", CASES, ids=str)
def test_every_method_reaches_fleet_engine_with_the_entitys_token(route, fleet_engine, provider, new_id, case):
    entity = _entity(case.entity_type, new_id)
    tag = new_id("call-")

    answer = case.call(route.clients, entity, route.options(entity, tag=tag))

    assert case.view(answer) == case.expected(entity)
    [seen] = fleet_engine.records(tag=tag)
    assert (seen.method, seen.outcome, seen.code) == (case.method, ACCEPTED, grpc.StatusCode.OK), seen.detail
    assert seen.entity == entity
    assert seen.authorization_count == 1
    # The client's own metadata is relayed unchanged.
    assert "gapic/" in (seen.header("x-goog-api-client") or "")
    if entity.type != FLEET:
        assert provider.fetches(entity) == 1


def test_every_method_of_the_published_clients_is_covered():
    """If a new version of the clients adds a method, this says the table needs it too."""
    from standin_fleet_engine import METHODS

    assert sorted(case.method for case in CASES) == sorted(method.short_name for method in METHODS)
    published = set()
    for package in (fe, fd):
        with open(os.path.join(os.path.dirname(package.__file__), "gapic_metadata.json")) as file:
            for service, spec in json.load(file)["services"].items():
                published.update(f"{service}/{rpc}" for rpc in spec["clients"]["grpc"]["rpcs"])
    assert published == {case.method for case in CASES}


# --------------------------------------------------------------------------------------------
# Tokens: singleflight, replacing the client's header, provider failures as gRPC statuses
# --------------------------------------------------------------------------------------------


def _get_vehicle(route, entity: Entity, **options):
    return route.clients.vehicles.get_vehicle(fe.GetVehicleRequest(name=entity.resource_name()), **route.options(entity, **options))


def test_concurrent_calls_for_cold_vehicles_fetch_each_token_once(sidecar_route, fleet_engine, provider, new_id):
    vehicles = [Entity(PROVIDER_ID, VEHICLE, new_id("cold-")) for _ in range(10)]
    calls = [vehicles[i % 10] for i in range(100)]
    provider.delay = 0.5  # so that all 100 calls are waiting while the fetches are in flight
    start = threading.Barrier(len(calls))

    def call(entity):
        start.wait()
        return _get_vehicle(sidecar_route, entity, timeout=20).name

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(calls)) as pool:
        names = list(pool.map(call, calls))

    assert names == [entity.resource_name() for entity in calls]
    # Both facts in one message: a second fetch after a refusal by Fleet Engine (a 401 makes
    # the sidecar drop the token and fetch again) reads differently from a second fetch with
    # every call accepted (the provider client sending a request twice).
    fetches = {entity.id: provider.fetches(entity) for entity in vehicles}
    outcomes = {entity.id: [r.outcome for r in fleet_engine.records(entity_id=entity.id)] for entity in vehicles}
    assert fetches == {entity.id: 1 for entity in vehicles}, f"fetches {fetches}; Fleet Engine's outcomes {outcomes}"
    assert outcomes == {entity.id: [ACCEPTED] * 10 for entity in vehicles}


def test_calls_share_a_few_upstream_connections(sidecar_route, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id("shared-"))
    _get_vehicle(sidecar_route, vehicle)  # warm: token cached, upstream connected
    opened_before = fleet_engine.mux.connections_opened("h2")

    with concurrent.futures.ThreadPoolExecutor(max_workers=100) as pool:
        list(pool.map(lambda _: _get_vehicle(sidecar_route, vehicle), range(100)))

    # Multiplexed: not a connection per call (docs/CONTRACT.md leaves how many to the sidecar).
    assert fleet_engine.mux.connections_opened("h2") - opened_before <= 4


def test_the_clients_own_authorization_is_replaced(sidecar_route, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    tag = new_id("call-")

    answer = _get_vehicle(sidecar_route, vehicle, tag=tag, metadata=[("authorization", "Bearer not-a-fleet-engine-token")])

    assert answer.name == vehicle.resource_name()
    [seen] = fleet_engine.records(tag=tag)
    assert (seen.outcome, seen.authorization_count) == (ACCEPTED, 1)


def _expect_status(code: grpc.StatusCode, call) -> api_exceptions.GoogleAPICallError:
    with pytest.raises(api_exceptions.GoogleAPICallError) as raised:
        call()
    assert raised.value.grpc_status_code == code, raised.value.message
    return raised.value


# How grpcio words a failure of its own to reach the server or to keep the connection, which
# also reads UNAVAILABLE: such a status is not an answer from the sidecar.
_GRPCIO_TRANSPORT_FAILURES = ("failed to connect to all addresses", "Socket closed", "Connection reset", "Broken pipe",
                              "recvmsg:", "Stream removed", "keepalive watchdog timeout")


def _expect_sidecar_status(code: grpc.StatusCode, channel: grpc.Channel, call) -> api_exceptions.GoogleAPICallError:
    """Like _expect_status, for UNAVAILABLE above all: the status must be the sidecar's answer
    over an HTTP/2 connection, with a message an operator can act on."""
    try:
        grpc.channel_ready_future(channel).result(timeout=3)
    except grpc.FutureTimeoutError:
        pytest.fail("no HTTP/2 connection to the sidecar")
    error = _expect_status(code, call)
    assert error.message, "no grpc-message"
    assert not error.message.startswith(_GRPCIO_TRANSPORT_FAILURES), f"not an answer from the sidecar: {error.message}"
    return error


@pytest.mark.parametrize("status", [401, 403, 404])
def test_provider_refusal_is_permission_denied(sidecar_route, fleet_engine, provider, new_id, status):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    provider.status = status

    error = _expect_status(grpc.StatusCode.PERMISSION_DENIED, lambda: _get_vehicle(sidecar_route, vehicle))

    assert error.message  # an operator can act on it
    assert provider.fetches(vehicle) >= 1
    assert fleet_engine.records(entity_id=vehicle.id) == []


@pytest.mark.parametrize("failure", ["status-500", "status-503", "garbage", "no_token"])
def test_provider_failure_is_unavailable(sidecar_route, fleet_engine, provider, new_id, failure):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    if failure.startswith("status-"):
        provider.status = int(failure.split("-")[1])
    else:
        provider.answer = failure

    _expect_sidecar_status(grpc.StatusCode.UNAVAILABLE, sidecar_route.channel, lambda: _get_vehicle(sidecar_route, vehicle))

    assert provider.fetches(vehicle) >= 1
    assert fleet_engine.records(entity_id=vehicle.id) == []


def test_slow_provider_is_unavailable(sidecar_factory, provider, fleet_engine, new_id):
    sidecar = sidecar_factory(extra_args=["--provider-timeout", "1"])
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    provider.delay = 4
    with grpc.insecure_channel(sidecar.address) as channel:
        clients = official_clients(channel)
        started = time.monotonic()
        _expect_sidecar_status(grpc.StatusCode.UNAVAILABLE, channel, lambda: clients.vehicles.get_vehicle(
            fe.GetVehicleRequest(name=vehicle.resource_name()), retry=None, timeout=10))
        assert time.monotonic() - started < 3.5
    assert fleet_engine.records(entity_id=vehicle.id) == []


def test_a_fetch_on_a_reused_provider_connection_is_timed_from_its_request(sidecar_factory, provider, fleet_engine, new_id):
    """`--provider-timeout` counts from the fetch's request, not from the last bytes its
    keep-alive connection read: a connection that sat idle in the pool for most of the timeout
    and then carries a slow fetch neither times it out early nor sends it a second time (the
    provider saw the first request: only a connection closed before it was written may be
    tried again)."""
    sidecar = sidecar_factory(extra_args=["--provider-timeout", "2"])
    first, second = (Entity(PROVIDER_ID, VEHICLE, new_id("reused-")) for _ in range(2))
    with grpc.insecure_channel(sidecar.address) as channel:
        clients = official_clients(channel)

        def get(entity):
            return clients.vehicles.get_vehicle(fe.GetVehicleRequest(name=entity.resource_name()), retry=None, timeout=10)

        assert get(first).name == first.resource_name()  # the provider connection, now idle in the pool
        time.sleep(1.4)
        provider.delay = 1.2  # answered 2.6 s after the connection last read, 1.2 s after the request
        assert get(second).name == second.resource_name()
    assert provider.fetches(second) == 1
    assert [r.outcome for r in fleet_engine.records(entity_id=second.id)] == [ACCEPTED]


@pytest.fixture
def refusing_port():
    """A loopback port that refuses connections: bound but not listening, and held for the
    test, so that nothing else (the sidecar's own listener included) can take it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_unreachable_provider_is_unavailable(sidecar_factory, fleet_engine, new_id, refusing_port):
    sidecar = sidecar_factory(provider_url=f"http://127.0.0.1:{refusing_port}/token/{{provider}}/{{type}}/{{id}}")
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    with grpc.insecure_channel(sidecar.address) as channel:
        _expect_sidecar_status(grpc.StatusCode.UNAVAILABLE, channel, lambda: official_clients(channel).vehicles.get_vehicle(
            fe.GetVehicleRequest(name=vehicle.resource_name()), retry=None, timeout=10))
    assert fleet_engine.records(entity_id=vehicle.id) == []


def test_unreachable_fleet_engine_is_unavailable(sidecar_factory, provider, new_id, refusing_port):
    sidecar = sidecar_factory(upstream=f"http://127.0.0.1:{refusing_port}")
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    with grpc.insecure_channel(sidecar.address) as channel:
        _expect_sidecar_status(grpc.StatusCode.UNAVAILABLE, channel, lambda: official_clients(channel).vehicles.get_vehicle(
            fe.GetVehicleRequest(name=vehicle.resource_name()), retry=None, timeout=10))


# --------------------------------------------------------------------------------------------
# What is not a Fleet Engine call, or names no valid entity, is answered by the sidecar
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [
    "/maps.fleetengine.v1.VehicleService/UpdateVehicleLocation",  # removed from Fleet Engine
    "/maps.fleetengine.v1.VehicleService/NoSuchMethod",
    "/grpc.health.v1.Health/Check",
])
def test_unknown_method_is_unimplemented_and_not_forwarded(sidecar_route, fleet_engine, new_id, path):
    tag = new_id("call-")
    request = fe.GetVehicleRequest.serialize(fe.GetVehicleRequest(name=f"{PARENT}/vehicles/{new_id()}"))
    call = sidecar_route.channel.unary_unary(path)

    with pytest.raises(grpc.RpcError) as raised:
        call(request, timeout=10, metadata=[("x-test-call", tag)])

    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert fleet_engine.records(tag=tag) == []


@pytest.mark.parametrize("name", [
    f"{PARENT}/vehicles/",
    f"{PARENT}/vehicles/a:b",
    f"{PARENT}/vehicles/what?",
    f"{PARENT}/vehicles/" + "x" * 65,
    f"{PARENT}/trips/a-trip-not-a-vehicle",
    "",
], ids=["empty-id", "colon", "question-mark", "65-characters", "wrong-collection", "no-name"])
def test_invalid_entity_is_invalid_argument_and_not_forwarded(sidecar_route, fleet_engine, provider, new_id, name):
    tag = new_id("call-")
    fetches_before = sum(provider.fetch_counts().values())

    _expect_status(grpc.StatusCode.INVALID_ARGUMENT, lambda: sidecar_route.clients.vehicles.get_vehicle(
        fe.GetVehicleRequest(name=name), retry=None, timeout=10, metadata=[("x-test-call", tag)]))

    assert fleet_engine.records(tag=tag) == []
    assert sum(provider.fetch_counts().values()) == fetches_before


def test_create_without_an_id_is_invalid_argument(sidecar_route, fleet_engine, new_id):
    tag = new_id("call-")
    _expect_status(grpc.StatusCode.INVALID_ARGUMENT, lambda: sidecar_route.clients.vehicles.create_vehicle(
        fe.CreateVehicleRequest(parent=PARENT, vehicle=fe.Vehicle()), retry=None, timeout=10, metadata=[("x-test-call", tag)]))
    assert fleet_engine.records(tag=tag) == []


# --------------------------------------------------------------------------------------------
# Relaying: sizes, statuses, metadata, compression, cancellation, deadlines
# --------------------------------------------------------------------------------------------


def test_a_300_kb_request_passes(route, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    value = os.urandom(150_000).hex()  # 300 KB that does not compress
    tag = new_id("call-")

    answer = route.clients.vehicles.update_vehicle_attributes(
        fe.UpdateVehicleAttributesRequest(name=vehicle.resource_name(), attributes=[fe.VehicleAttribute(key="blob", value=value)]),
        **route.options(vehicle, tag=tag))

    assert answer.attributes[0].value == value
    [seen] = fleet_engine.records(tag=tag)
    assert seen.outcome == ACCEPTED and seen.request_bytes > 300_000


def test_a_1_mib_response_passes(route, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id("big-"))

    answer = _get_vehicle(route, vehicle)

    assert answer.name == vehicle.resource_name()
    assert len(answer.current_route_segment) == ONE_MIB


@pytest.mark.parametrize("code", [grpc.StatusCode.NOT_FOUND, grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.ALREADY_EXISTS],
                         ids=lambda code: code.name)
def test_fleet_engine_status_is_relayed_with_its_message(route, fleet_engine, new_id, code):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id(f"fail-{code.name.replace('_', '').lower()}-"))

    error = _expect_status(code, lambda: _get_vehicle(route, vehicle))

    assert error.message == f"stand-in Fleet Engine: vehicle {vehicle.id} answers {code.name} as told"


def test_custom_metadata_is_relayed_both_ways(route, fleet_engine, new_id):
    """Initial metadata from Fleet Engine, and trailing metadata echoing the request's, on a
    success and on an error, through the official client's own stub."""
    stub = route.clients.vehicles.transport.get_vehicle
    for vehicle in (Entity(PROVIDER_ID, VEHICLE, new_id()), Entity(PROVIDER_ID, VEHICLE, new_id("fail-notfound-"))):
        options = route.options(vehicle, metadata=[("x-standin-echo", f"echo {vehicle.id}")])
        try:
            _, call = stub.with_call(fe.GetVehicleRequest(name=vehicle.resource_name()), metadata=options["metadata"], timeout=10)
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.NOT_FOUND
            call = error
        assert ("x-standin-method", "VehicleService/GetVehicle") in [tuple(m) for m in call.initial_metadata()]
        assert ("x-standin-echo", f"echo {vehicle.id}") in [tuple(m) for m in call.trailing_metadata()]


def test_a_gzip_request_is_read_and_forwarded_as_sent(route, fleet_engine, new_id):
    """The sidecar inflates a `grpc-encoding: gzip` message to find the entity, and forwards the
    compressed bytes: 300 KB of attributes arrive upstream in a few KB."""
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    tag = new_id("call-")
    bytes_before = fleet_engine.mux.bytes_from_clients("h2")
    with grpc.insecure_channel(route.address, compression=grpc.Compression.Gzip) as channel:
        answer = official_clients(channel).vehicles.update_vehicle_attributes(
            fe.UpdateVehicleAttributesRequest(name=vehicle.resource_name(), attributes=[fe.VehicleAttribute(key="k", value="a" * 300_000)]),
            **route.options(vehicle, tag=tag))
    assert len(answer.attributes[0].value) == 300_000
    [seen] = fleet_engine.records(tag=tag)
    assert seen.outcome == ACCEPTED and seen.request_bytes > 300_000
    assert fleet_engine.mux.bytes_from_clients("h2") - bytes_before < 50_000


def test_client_cancellation_reaches_fleet_engine(route, fleet_engine, new_id):
    """No deadline (so no `grpc-timeout` to forward): only a propagated cancellation can tell
    Fleet Engine the caller has gone."""
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id("slow-"))
    stub = route.clients.vehicles.transport.get_vehicle
    future = stub.future(fe.GetVehicleRequest(name=vehicle.resource_name()), metadata=route.options(vehicle)["metadata"])
    time.sleep(1.0)  # forwarded by now; the stand-in is holding it
    cancelled_at = time.monotonic()
    assert future.cancel()

    [seen] = fleet_engine.wait_for_records(timeout=4, entity_id=vehicle.id)
    assert seen.cancelled, "Fleet Engine kept working on a call its client had cancelled"
    assert time.monotonic() - cancelled_at < 2


def test_client_deadline_reaches_fleet_engine(route, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id("slow-"))

    _expect_status(grpc.StatusCode.DEADLINE_EXCEEDED, lambda: _get_vehicle(route, vehicle, timeout=1.0))

    [seen] = fleet_engine.wait_for_records(timeout=4, entity_id=vehicle.id)
    assert seen.cancelled, "Fleet Engine kept working on a call whose deadline had passed"


def test_deadline_passing_while_waiting_for_a_token_is_deadline_exceeded(sidecar_route, fleet_engine, provider, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    provider.delay = 3
    started = time.monotonic()

    _expect_status(grpc.StatusCode.DEADLINE_EXCEEDED, lambda: _get_vehicle(sidecar_route, vehicle, timeout=1.0))

    time.sleep(max(0.0, started + 3.8 - time.monotonic()))  # the token has arrived by now
    assert fleet_engine.records(entity_id=vehicle.id) == [], "a call was forwarded after its deadline"


def test_a_call_waits_for_a_slow_provider_within_its_deadline(sidecar_route, provider, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    provider.delay = 1.5

    assert _get_vehicle(sidecar_route, vehicle, timeout=6).name == vehicle.resource_name()


# --------------------------------------------------------------------------------------------
# One port, both protocols
# --------------------------------------------------------------------------------------------


def test_rest_and_grpc_on_the_same_port(route, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    rest_tag, grpc_tag = new_id("rest-"), new_id("grpc-")
    headers = dict(route.options(vehicle, tag=rest_tag)["metadata"])

    for _ in range(2):  # and again, after gRPC used the port
        request = urllib.request.Request(f"http://{route.address}/v1/{vehicle.resource_name()}", headers=headers)
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
            assert json.load(response)["name"] == vehicle.resource_name()
        assert _get_vehicle(route, vehicle, tag=grpc_tag).name == vehicle.resource_name()

    rest_calls = fleet_engine.records(tag=rest_tag)
    grpc_calls = fleet_engine.records(tag=grpc_tag)
    assert [(r.method, r.outcome, r.entity) for r in rest_calls] == [("REST GET", ACCEPTED, vehicle)] * 2
    assert [(r.method, r.outcome, r.entity) for r in grpc_calls] == [("VehicleService/GetVehicle", ACCEPTED, vehicle)] * 2


# --------------------------------------------------------------------------------------------
# A TLS upstream (ALPN h2) with a test CA
# --------------------------------------------------------------------------------------------


def test_standin_tls_fleet_engine_speaks_h2_with_the_test_ca(tls_fleet_engine, provider, pki, new_id):
    """Direct: the TLS stand-in itself, so the sidecar test below can fail only for the sidecar."""
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    credentials = grpc.ssl_channel_credentials(root_certificates=pki.ca_file.read_bytes())
    with grpc.secure_channel(tls_fleet_engine.address, credentials) as channel:
        answer = official_clients(channel).vehicles.get_vehicle(
            fe.GetVehicleRequest(name=vehicle.resource_name()), retry=None, timeout=10,
            metadata=[("authorization", "Bearer " + provider.fetch_token(vehicle))])
    assert answer.name == vehicle.resource_name()
    [seen] = tls_fleet_engine.records(entity_id=vehicle.id)
    assert seen.tls and seen.outcome == ACCEPTED


def test_tls_upstream_with_the_test_ca(sidecar_factory, tls_fleet_engine, pki, provider, new_id):
    sidecar = sidecar_factory(upstream=f"https://{tls_fleet_engine.address}", extra_args=["--upstream-ca-file", str(pki.ca_file)])
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    with grpc.insecure_channel(sidecar.address) as channel:
        answer = official_clients(channel).vehicles.update_vehicle(
            fe.UpdateVehicleRequest(name=vehicle.resource_name(), vehicle=fe.Vehicle(vehicle_state=fe.VehicleState.ONLINE),
                                    update_mask=_mask("vehicle_state")), retry=None, timeout=10)
    assert answer.name == vehicle.resource_name()
    [seen] = tls_fleet_engine.records(entity_id=vehicle.id)
    assert seen.tls and (seen.outcome, seen.entity) == (ACCEPTED, vehicle)


def test_tls_upstream_with_an_untrusted_certificate_is_unavailable(sidecar_factory, tls_fleet_engine, new_id):
    sidecar = sidecar_factory(upstream=f"https://{tls_fleet_engine.address}")  # the system trust store
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    with grpc.insecure_channel(sidecar.address) as channel:
        _expect_sidecar_status(grpc.StatusCode.UNAVAILABLE, channel, lambda: official_clients(channel).vehicles.get_vehicle(
            fe.GetVehicleRequest(name=vehicle.resource_name()), retry=None, timeout=10))
    assert tls_fleet_engine.records(entity_id=vehicle.id) == []
