"""A stand-in Fleet Engine gRPC server that judges every call's token the way Fleet Engine does.

Every method of docs/CONTRACT.md §3's gRPC table is served, with the request and response messages of the
official `google-maps-fleetengine` and `google-maps-fleetengine-delivery` packages. For each call
it reads the `authorization` metadata (`Bearer <jwt>`), checks the RS256 signature against the
trusted provider keys, `aud`, `iss`/`sub`, `iat` (10 min skew), `exp` (lifetime at most 1 h),
the project, and that the `authorization` claim covers the entity the request names (docs/CONTRACT.md §2/§3).
A bad, missing or expired token gets UNAUTHENTICATED, a good token for another entity or
project PERMISSION_DENIED, a request naming no valid entity INVALID_ARGUMENT; otherwise a valid
response that echoes the entity's resource name.

Special entity ids, to test relaying:
  big-…            a Vehicle answer carries 1 MiB in `current_route_segment`
  pad-…            any answer carries 64 KiB more (an unknown field clients skip)
  fail-<code>…     after the token check, answer that status (`fail-notfound` → NOT_FOUND)
  slow-…           wait up to 5 s before answering, noting whether the caller cancelled
Request metadata `x-standin-echo` is sent back as trailing metadata; every answer carries
initial metadata `x-standin-method`.

Optionally also a REST (HTTP/1.1 JSON) stand-in for a few vehicle paths, on the same address as
gRPC (see protocol_mux.py), for the "REST and gRPC on one port" test.

Run alone (for the demo in test_official_clients.py):
    python standin_fleet_engine.py --listen 127.0.0.1:4199 --public-key provider-key.pem
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import signal
import sys
import threading
import time
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import grpc
from google.maps import fleetengine_delivery_v1 as fd
from google.maps import fleetengine_v1 as fe
from google.protobuf import empty_pb2

from fleet_entities import (
    DELIVERY_VEHICLE,
    TASK,
    TRACKING,
    TRIP,
    VEHICLE,
    BadResourceName,
    Entity,
    entity_from_create,
    entity_from_name,
    parse_name,
    parse_parent,
    valid_entity_id,
)
from fleet_jwt import TokenVerifier, load_jwks, load_public_key_pem
from protocol_mux import ProtocolMux

ONE_MIB = 1 << 20
SLOW_SECONDS = 5.0
# An entity whose id starts with "pad-" is answered with this many extra bytes (an unknown
# protobuf field the clients skip), for flow-control tests.
PADDED_ANSWER_BYTES = 64 * 1024
_STATUS_BY_SQUASHED_NAME = {code.name.replace("_", "").lower(): code for code in grpc.StatusCode}

# --------------------------------------------------------------------------------------------
# The method table: which entity a request is about, and what to answer.
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Method:
    service: str  # "maps.fleetengine.v1.VehicleService"
    name: str  # "GetVehicle"
    request_type: type
    entity: Callable[[Any], Entity]
    respond: Callable[[Any, Entity], Any]

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.name}"

    @property
    def short_name(self) -> str:
        """"VehicleService/GetVehicle", the key of the counts."""
        return f"{self.service.rsplit('.', 1)[1]}/{self.name}"


def _named(entity_type: str, *inner: str) -> Callable[[Any], Entity]:
    """The entity in `name`, or in `inner…` → `name` (UpdateTask's `task.name`)."""

    def entity(request) -> Entity:
        message = request
        for field in inner:
            message = getattr(message, field)
        return entity_from_name(message.name, entity_type)

    return entity


def _created(entity_type: str, id_field: str) -> Callable[[Any], Entity]:
    return lambda request: entity_from_create(request.parent, getattr(request, id_field), entity_type)


def _fleet_parent(request) -> Entity:
    return Entity.fleet(parse_parent(request.parent))


def _fleet_billable_trip(request) -> Entity:
    provider, _ = parse_name(request.name, "billableTrips")
    return Entity.fleet(provider)


def _copy(message_type, message, **changes):
    """A proto-plus message copied, with fields changed."""
    copy = message_type.deserialize(message_type.serialize(message))
    for field, value in changes.items():
        setattr(copy, field, value)
    return copy


def _vehicle(request_vehicle, entity: Entity):
    vehicle = _copy(fe.Vehicle, request_vehicle, name=entity.resource_name()) if request_vehicle is not None else fe.Vehicle(name=entity.resource_name())
    if entity.id.startswith("big-"):
        vehicle.current_route_segment = "x" * ONE_MIB
    return vehicle


def _empty(request, entity):
    return empty_pb2.Empty()


def _listed(parent: str, collection: str) -> str:
    return f"{parent}/{collection}/listed-by-stand-in"


V1 = "maps.fleetengine.v1"
DELIVERY_V1 = "maps.fleetengine.delivery.v1"
VEHICLES, TRIPS, DELIVERY = f"{V1}.VehicleService", f"{V1}.TripService", f"{DELIVERY_V1}.DeliveryService"

METHODS: tuple[Method, ...] = (
    # VehicleService
    Method(VEHICLES, "CreateVehicle", fe.CreateVehicleRequest, _created(VEHICLE, "vehicle_id"),
           lambda r, e: _vehicle(r.vehicle, e)),
    Method(VEHICLES, "GetVehicle", fe.GetVehicleRequest, _named(VEHICLE), lambda r, e: _vehicle(None, e)),
    Method(VEHICLES, "DeleteVehicle", fe.DeleteVehicleRequest, _named(VEHICLE), _empty),
    Method(VEHICLES, "UpdateVehicle", fe.UpdateVehicleRequest, _named(VEHICLE), lambda r, e: _vehicle(r.vehicle, e)),
    Method(VEHICLES, "UpdateVehicleAttributes", fe.UpdateVehicleAttributesRequest, _named(VEHICLE),
           lambda r, e: fe.UpdateVehicleAttributesResponse(attributes=list(r.attributes))),
    Method(VEHICLES, "ListVehicles", fe.ListVehiclesRequest, _fleet_parent,
           lambda r, e: fe.ListVehiclesResponse(vehicles=[fe.Vehicle(name=_listed(r.parent, "vehicles"))], total_size=1)),
    Method(VEHICLES, "SearchVehicles", fe.SearchVehiclesRequest, _fleet_parent,
           lambda r, e: fe.SearchVehiclesResponse(matches=[fe.VehicleMatch(vehicle=fe.Vehicle(name=_listed(r.parent, "vehicles")))])),
    # TripService
    Method(TRIPS, "CreateTrip", fe.CreateTripRequest, _created(TRIP, "trip_id"),
           lambda r, e: _copy(fe.Trip, r.trip, name=e.resource_name())),
    Method(TRIPS, "GetTrip", fe.GetTripRequest, _named(TRIP), lambda r, e: fe.Trip(name=e.resource_name())),
    Method(TRIPS, "DeleteTrip", fe.DeleteTripRequest, _named(TRIP), _empty),
    Method(TRIPS, "UpdateTrip", fe.UpdateTripRequest, _named(TRIP), lambda r, e: _copy(fe.Trip, r.trip, name=e.resource_name())),
    Method(TRIPS, "SearchTrips", fe.SearchTripsRequest, _fleet_parent,
           lambda r, e: fe.SearchTripsResponse(trips=[fe.Trip(name=_listed(r.parent, "trips"), vehicle_id=r.vehicle_id)])),
    Method(TRIPS, "ReportBillableTrip", fe.ReportBillableTripRequest, _fleet_billable_trip, _empty),
    # DeliveryService
    Method(DELIVERY, "CreateDeliveryVehicle", fd.CreateDeliveryVehicleRequest, _created(DELIVERY_VEHICLE, "delivery_vehicle_id"),
           lambda r, e: _copy(fd.DeliveryVehicle, r.delivery_vehicle, name=e.resource_name())),
    Method(DELIVERY, "GetDeliveryVehicle", fd.GetDeliveryVehicleRequest, _named(DELIVERY_VEHICLE),
           lambda r, e: fd.DeliveryVehicle(name=e.resource_name())),
    Method(DELIVERY, "DeleteDeliveryVehicle", fd.DeleteDeliveryVehicleRequest, _named(DELIVERY_VEHICLE), _empty),
    Method(DELIVERY, "UpdateDeliveryVehicle", fd.UpdateDeliveryVehicleRequest, _named(DELIVERY_VEHICLE, "delivery_vehicle"),
           lambda r, e: _copy(fd.DeliveryVehicle, r.delivery_vehicle)),
    Method(DELIVERY, "ListDeliveryVehicles", fd.ListDeliveryVehiclesRequest, _fleet_parent,
           lambda r, e: fd.ListDeliveryVehiclesResponse(
               delivery_vehicles=[fd.DeliveryVehicle(name=_listed(r.parent, "deliveryVehicles"))], total_size=1)),
    Method(DELIVERY, "CreateTask", fd.CreateTaskRequest, _created(TASK, "task_id"),
           lambda r, e: _copy(fd.Task, r.task, name=e.resource_name())),
    Method(DELIVERY, "GetTask", fd.GetTaskRequest, _named(TASK), lambda r, e: fd.Task(name=e.resource_name())),
    Method(DELIVERY, "DeleteTask", fd.DeleteTaskRequest, _named(TASK), _empty),
    Method(DELIVERY, "UpdateTask", fd.UpdateTaskRequest, _named(TASK, "task"), lambda r, e: _copy(fd.Task, r.task)),
    Method(DELIVERY, "ListTasks", fd.ListTasksRequest, _fleet_parent,
           lambda r, e: fd.ListTasksResponse(tasks=[fd.Task(name=_listed(r.parent, "tasks"))], total_size=1)),
    Method(DELIVERY, "BatchCreateTasks", fd.BatchCreateTasksRequest, _fleet_parent,
           lambda r, e: fd.BatchCreateTasksResponse(
               tasks=[_copy(fd.Task, each.task, name=f"{r.parent}/tasks/{each.task_id}") for each in r.requests])),
    Method(DELIVERY, "GetTaskTrackingInfo", fd.GetTaskTrackingInfoRequest, _named(TRACKING),
           lambda r, e: fd.TaskTrackingInfo(name=e.resource_name(), tracking_id=e.id)),
)
METHODS_BY_PATH = {method.path: method for method in METHODS}

# --------------------------------------------------------------------------------------------
# What the stand-in saw
# --------------------------------------------------------------------------------------------

ACCEPTED = "accepted"  # the token was good for the entity (the answer may still be a fail-… status)
REJECTED = "rejected"  # UNAUTHENTICATED or PERMISSION_DENIED
INVALID = "invalid"  # the request named no valid entity
UNKNOWN_METHOD = "unknown_method"


@dataclasses.dataclass(frozen=True)
class CallRecord:
    method: str  # "VehicleService/GetVehicle", "REST GET", or the full path of an unknown method
    entity: Entity | None
    outcome: str
    code: grpc.StatusCode
    detail: str = ""
    reason: str | None = None  # why a token was rejected ("entity_not_covered", …)
    # Request metadata, the `authorization` values left out (never keep tokens around).
    metadata: tuple[tuple[str, str], ...] = ()
    authorization_count: int = 0
    request_bytes: int = 0
    tls: bool = False
    cancelled: bool = False

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.metadata if key == name), None)


@dataclasses.dataclass(frozen=True)
class _Decoded:
    message: Any
    size: int


class StandInFleetEngine:
    """In-process server: `start()`, point a channel at `address`, read `records()`/`counts()`.

    `keys`: (kid or None, RSA public key) pairs the tokens may be signed with.
    `tls`: (certificate PEM, private key PEM) to serve gRPC over TLS (ALPN h2) instead.
    `rest`: also answer REST over HTTP/1.1 on the same address.
    """

    def __init__(self, keys, *, tls: tuple[bytes, bytes] | None = None, rest: bool = False,
                 now: Callable[[], float] = time.time, listen: str = "127.0.0.1:0", max_concurrent_streams: int | None = None):
        self.verifier = TokenVerifier(keys)
        self.tls = tls
        self.rest = rest and tls is None
        self.now = now
        self.listen = listen
        self.max_concurrent_streams = max_concurrent_streams
        self.on_record: Callable[[CallRecord], None] | None = None
        self._lock = threading.Lock()
        self._records: list[CallRecord] = []
        self._server: grpc.Server | None = None
        self._grpc_port = 0
        self._rest_server: ThreadingHTTPServer | None = None
        self.mux: ProtocolMux | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> "StandInFleetEngine":
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=256, thread_name_prefix="standin-fe"),
            handlers=[_Handler(self)],
            options=[("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", 16 * ONE_MIB)]
            + ([("grpc.max_concurrent_streams", self.max_concurrent_streams)] if self.max_concurrent_streams else []),
        )
        grpc_listen = "127.0.0.1:0" if self.rest else self.listen
        if self.tls is None:
            self._grpc_port = self._server.add_insecure_port(grpc_listen)
        else:
            certificate, key = self.tls
            self._grpc_port = self._server.add_secure_port(grpc_listen, grpc.ssl_server_credentials([(key, certificate)]))
        if not self._grpc_port:
            raise RuntimeError(f"could not listen on {grpc_listen}")
        self._server.start()
        if self.rest:
            self._rest_server = ThreadingHTTPServer(("127.0.0.1", 0), _rest_handler(self))
            self._rest_server.daemon_threads = True
            threading.Thread(target=self._rest_server.serve_forever, name="standin-fe-rest", daemon=True).start()
            host, port = self.listen.rsplit(":", 1)
            self.mux = ProtocolMux(("127.0.0.1", self._grpc_port), self._rest_server.server_address[:2], listen=(host, int(port)))
        return self

    def stop(self) -> None:
        if self.mux is not None:
            self.mux.close()
        if self._rest_server is not None:
            self._rest_server.shutdown()
            self._rest_server.server_close()
        if self._server is not None:
            self._server.stop(grace=None)

    @property
    def address(self) -> str:
        """Where clients (and the sidecar's `--upstream`) connect: gRPC, and REST if enabled."""
        return self.mux.address if self.mux is not None else f"127.0.0.1:{self._grpc_port}"

    @property
    def grpc_address(self) -> str:
        return f"127.0.0.1:{self._grpc_port}"

    # -- what was seen -----------------------------------------------------------------------

    def records(self, *, method: str | None = None, entity_id: str | None = None, tag: str | None = None) -> list[CallRecord]:
        """Calls seen so far, filtered: `tag` matches the `x-test-call` request metadata."""
        with self._lock:
            records = list(self._records)
        return [
            record for record in records
            if (method is None or record.method == method)
            and (entity_id is None or (record.entity is not None and record.entity.id == entity_id))
            and (tag is None or record.header("x-test-call") == tag)
        ]

    def counts(self) -> collections.Counter:
        """(method, outcome) → number of calls."""
        with self._lock:
            return collections.Counter((record.method, record.outcome) for record in self._records)

    def accepted(self, method: str) -> int:
        return self.counts()[(method, ACCEPTED)]

    def rejected(self, method: str) -> int:
        return self.counts()[(method, REJECTED)]

    def wait_for_records(self, timeout: float = 5.0, **filters) -> list[CallRecord]:
        """The matching records once there is at least one, or [] after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.records(**filters)
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.02)

    def reset(self) -> None:
        with self._lock:
            self._records.clear()

    def _record(self, record: CallRecord) -> None:
        with self._lock:
            self._records.append(record)
        if self.on_record is not None:
            self.on_record(record)

    # -- serving gRPC ------------------------------------------------------------------------

    def _serve(self, method: Method, decoded: _Decoded, context: grpc.ServicerContext):
        metadata = tuple((key, value) for key, value in context.invocation_metadata())
        authorization = [value for key, value in metadata if key == "authorization"]
        seen = dict(
            method=method.short_name,
            metadata=tuple((key, value) for key, value in metadata if key != "authorization"),
            authorization_count=len(authorization),
            request_bytes=decoded.size,
            tls=_is_tls(context),
        )
        context.send_initial_metadata((("x-standin-method", method.short_name),))
        echo = tuple((key, value) for key, value in metadata if key == "x-standin-echo")
        if echo:
            context.set_trailing_metadata(echo)

        try:
            entity = method.entity(decoded.message)
        except BadResourceName as error:
            self._record(CallRecord(entity=None, outcome=INVALID, code=grpc.StatusCode.INVALID_ARGUMENT, detail=str(error), **seen))
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"stand-in Fleet Engine: {error}")

        verdict = self.verifier.check_metadata(authorization, entity, self.now())
        if not verdict.ok:
            code = grpc.StatusCode.PERMISSION_DENIED if verdict.permission else grpc.StatusCode.UNAUTHENTICATED
            self._record(CallRecord(entity=entity, outcome=REJECTED, code=code, detail=verdict.detail, reason=verdict.reason, **seen))
            context.abort(code, f"stand-in Fleet Engine: {verdict.detail}")

        if entity.id.startswith("fail-"):
            code = _STATUS_BY_SQUASHED_NAME.get(entity.id[5:].split("-", 1)[0], grpc.StatusCode.UNKNOWN)
            message = f"stand-in Fleet Engine: {entity.type} {entity.id} answers {code.name} as told"
            self._record(CallRecord(entity=entity, outcome=ACCEPTED, code=code, detail=message, **seen))
            context.abort(code, message)

        cancelled = False
        if entity.id.startswith("slow-"):
            deadline = time.monotonic() + SLOW_SECONDS
            while time.monotonic() < deadline and context.is_active():
                time.sleep(0.02)
            cancelled = not context.is_active()

        response = method.respond(decoded.message, entity)
        if entity.id.startswith("pad-"):
            response = _Padded(response)
        self._record(CallRecord(entity=entity, outcome=ACCEPTED, code=grpc.StatusCode.OK, cancelled=cancelled, **seen))
        return response

    def _unknown(self, path: str, request: bytes, context: grpc.ServicerContext):
        metadata = tuple((key, value) for key, value in context.invocation_metadata() if key != "authorization")
        self._record(CallRecord(method=path, entity=None, outcome=UNKNOWN_METHOD, code=grpc.StatusCode.UNIMPLEMENTED,
                                metadata=metadata, request_bytes=len(request)))
        context.abort(grpc.StatusCode.UNIMPLEMENTED, f"stand-in Fleet Engine: no method {path}")


class _Handler(grpc.GenericRpcHandler):
    def __init__(self, engine: StandInFleetEngine):
        self.engine = engine

    def service(self, handler_call_details):
        path = handler_call_details.method
        method = METHODS_BY_PATH.get(path)
        if method is None:
            return grpc.unary_unary_rpc_method_handler(
                lambda request, context: self.engine._unknown(path, request, context),
                request_deserializer=None, response_serializer=None)
        return grpc.unary_unary_rpc_method_handler(
            lambda decoded, context: self.engine._serve(method, decoded, context),
            request_deserializer=lambda data: _Decoded(method.request_type.deserialize(data), len(data)),
            response_serializer=_serialize)


@dataclasses.dataclass(frozen=True)
class _Padded:
    """An answer with PADDED_ANSWER_BYTES of unknown field 999 after it."""

    message: Any


_PADDING = (bytes([0xBA, 0x3E])  # field 999, length-delimited; then the length as a 3-byte varint
            + bytes([0x80 | (PADDED_ANSWER_BYTES & 0x7F), (PADDED_ANSWER_BYTES >> 7) & 0x7F | 0x80, PADDED_ANSWER_BYTES >> 14])
            + b"p" * PADDED_ANSWER_BYTES)


def _serialize(message) -> bytes:
    if isinstance(message, _Padded):
        return _serialize(message.message) + _PADDING
    if isinstance(message, empty_pb2.Empty):
        return message.SerializeToString()
    return type(message).serialize(message)


def _is_tls(context: grpc.ServicerContext) -> bool:
    return context.auth_context().get("transport_security_type") == [b"ssl"]


# --------------------------------------------------------------------------------------------
# REST over HTTP/1.1 (a few paths: enough to show REST and gRPC share the sidecar's port)
# --------------------------------------------------------------------------------------------

_HTTP_STATUS = {grpc.StatusCode.UNAUTHENTICATED: 401, grpc.StatusCode.PERMISSION_DENIED: 403,
                grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.NOT_FOUND: 404}


def _rest_entity(path: str) -> Entity | None:
    """`/v1/providers/{p}/vehicles/{id}` → vehicle, `/v1/providers/{p}/vehicles` → fleet."""
    segments = path.split("?", 1)[0].split("/")
    if len(segments) < 5 or segments[:3] != ["", "v1", "providers"] or not segments[3] or segments[4] != "vehicles":
        return None
    if len(segments) == 5:
        return Entity.fleet(segments[3])
    if len(segments) == 6 and valid_entity_id(segments[5]):
        return Entity(segments[3], VEHICLE, segments[5])
    return None


def _rest_handler(engine: StandInFleetEngine):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _handle(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            entity = _rest_entity(self.path)
            if entity is None:
                return self._answer(grpc.StatusCode.NOT_FOUND, {"error": {"code": 404, "message": "no such path", "status": "NOT_FOUND"}})
            authorization = self.headers.get_all("Authorization") or []
            seen = dict(method=f"REST {self.command}", entity=entity, request_bytes=len(body),
                        metadata=tuple((k.lower(), v) for k, v in self.headers.items() if k.lower() != "authorization"),
                        authorization_count=len(authorization))
            verdict = engine.verifier.check_metadata(authorization, entity, engine.now())
            if not verdict.ok:
                code = grpc.StatusCode.PERMISSION_DENIED if verdict.permission else grpc.StatusCode.UNAUTHENTICATED
                engine._record(CallRecord(outcome=REJECTED, code=code, detail=verdict.detail, reason=verdict.reason, **seen))
                return self._answer(code, {"error": {"code": _HTTP_STATUS[code], "message": f"stand-in Fleet Engine: {verdict.detail}", "status": code.name}})
            engine._record(CallRecord(outcome=ACCEPTED, code=grpc.StatusCode.OK, **seen))
            if entity.type == VEHICLE:
                answer = {"name": entity.resource_name()}
            else:
                answer = {"vehicles": [{"name": _listed(entity.resource_name(), "vehicles")}], "totalSize": "1"}
            self._answer(grpc.StatusCode.OK, answer)

        do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _handle

        def _answer(self, code: grpc.StatusCode, body: dict):
            data = json.dumps(body).encode("utf-8")
            self.send_response(_HTTP_STATUS.get(code, 200))
            self.send_header("Content-Type", "application/json; charset=UTF-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args):
            pass

    return Handler


# --------------------------------------------------------------------------------------------
# Command line: a stand-in Fleet Engine for trying the sidecar by hand
# --------------------------------------------------------------------------------------------


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Stand-in Fleet Engine (gRPC and REST on one port) that checks token claims.")
    parser.add_argument("--listen", default="127.0.0.1:4199")
    parser.add_argument("--jwks", action="append", default=[],
                        help="a service account's public keys as a JWKS file named ACCOUNT.json (repeatable): "
                             "they sign for that account alone, as with `serve --signer key-file:`")
    parser.add_argument("--public-key", action="append", default=[],
                        help="PEM public key tokens may be signed with (repeatable), e.g. from "
                             "`fleet-token-proxy stand-in provider --public-key-out`")
    parser.add_argument("--tls-cert", help="serve gRPC over TLS with this certificate (PEM) ...")
    parser.add_argument("--tls-key", help="... and this private key (PEM)")
    args = parser.parse_args(argv)
    if not args.public_key and not args.jwks:
        parser.error("give --public-key or --jwks: keys to trust")
    keys = []
    for path in args.public_key:
        with open(path, "rb") as file:
            keys.append((None, load_public_key_pem(file.read())))
    tls = None
    if args.tls_cert or args.tls_key:
        with open(args.tls_cert, "rb") as cert, open(args.tls_key, "rb") as key:
            tls = (cert.read(), key.read())
    engine = StandInFleetEngine(keys, tls=tls, rest=tls is None, listen=args.listen)
    for path in args.jwks:
        account = os.path.basename(path).removesuffix(".json")
        with open(path) as file:
            for kid, key in load_jwks(file.read()):
                engine.verifier.add_key(kid, key, account if "@" in account else None)
    engine.on_record = lambda r: print(f"{r.outcome:9} {r.code.name:17} {r.method} {r.entity or ''} {r.detail}", flush=True)
    engine.start()
    print(f"stand-in Fleet Engine listening on {engine.address}", file=sys.stderr, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    engine.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
