"""The sidecar's HTTP/2 side, seen frame by frame (h2_raw.py), for what grpcio cannot show:
that the sidecar ends a stream by itself when its `grpc-timeout` passes while it waits for a
token (a grpcio client would cancel at the same moment and hide it), and that malformed HTTP/2
is answered with the right connection error rather than a crash.
"""
from __future__ import annotations

import time

import grpc
import pytest
from google.maps import fleetengine_v1 as fe

import h2_raw
from conftest import PROVIDER_ID
from fleet_entities import VEHICLE, Entity

GET_VEHICLE = "/maps.fleetengine.v1.VehicleService/GetVehicle"


def _get_vehicle_message(entity: Entity) -> bytes:
    return h2_raw.grpc_message(fe.GetVehicleRequest.serialize(fe.GetVehicleRequest(name=entity.resource_name())))


def test_grpc_timeout_ends_the_stream_while_waiting_for_a_token(sidecar, fleet_engine, provider, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    provider.delay = 3
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        sent = connection.send_request(1, connection.grpc_headers(GET_VEHICLE, ("grpc-timeout", "1000m")), _get_vehicle_message(vehicle))

        end = connection.wait_for_stream_end(1, timeout=5)

        assert end is not None, "the sidecar never ended the stream"
        assert (end.type, end.flags & h2_raw.END_STREAM) == (h2_raw.HEADERS, h2_raw.END_STREAM), "want a trailers-only answer"
        assert 0.8 <= end.at - sent <= 2.0, f"ended {end.at - sent:.2f} s after the request, want about 1 s"
    finally:
        connection.close()
    time.sleep(max(0.0, sent + 3.8 - time.monotonic()))  # the token has arrived by now
    assert fleet_engine.records(entity_id=vehicle.id) == [], "a call was forwarded after its deadline"


MALFORMED = {
    # RFC 9113 §6.1: DATA on stream 0 is a connection error PROTOCOL_ERROR.
    "data-on-stream-0": (h2_raw.frame(h2_raw.DATA, 0, 0, b"x"), h2_raw.PROTOCOL_ERROR),
    # RFC 9113 §4.3: a header block that cannot be decoded is a COMPRESSION_ERROR (an indexed
    # field with an index far past any table).
    "undecodable-header-block": (h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS | h2_raw.END_STREAM, 1, b"\xff\xff\xff\xff\x0f"),
                                 h2_raw.COMPRESSION_ERROR),
    # RFC 9113 §4.2: a frame over SETTINGS_MAX_FRAME_SIZE (16384 by default) is a FRAME_SIZE_ERROR,
    # a connection error when the frame carries a field block.
    "oversized-headers-frame": (h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, b"\x00" * 20000), h2_raw.FRAME_SIZE_ERROR),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_http2_gets_goaway_and_the_sidecar_keeps_serving(sidecar, provider, new_id, case):
    data, error_code = MALFORMED[case]
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(data)
        goaway = connection.wait_for(lambda f: f.type == h2_raw.GOAWAY, timeout=5)
    finally:
        connection.close()

    assert goaway is not None, "no GOAWAY"
    assert goaway.error_code == error_code
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    with grpc.insecure_channel(sidecar.address) as channel:
        stub = channel.unary_unary(GET_VEHICLE, request_serializer=fe.GetVehicleRequest.serialize,
                                   response_deserializer=fe.Vehicle.deserialize)
        assert stub(fe.GetVehicleRequest(name=vehicle.resource_name()), timeout=10).name == vehicle.resource_name()
