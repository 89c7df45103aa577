"""Hostile and unlucky HTTP/2 clients against the real sidecar, frame by frame (h2_raw.py).

Each test asserts a clear gRPC error or a reset, that the sidecar still serves afterwards, that
its memory stays bounded (VmRSS of the process), and that nothing was forwarded that should not
have been (the stand-in Fleet Engine records what it received).
"""
from __future__ import annotations

import concurrent.futures
import gzip
import os
import re
import signal
import socket
import struct
import time
import urllib.request

import grpc
import pytest
from google.maps import fleetengine_v1 as fe

import h2_raw
from conftest import PROVIDER_ID
from fleet_entities import VEHICLE, Entity
from standin_fleet_engine import StandInFleetEngine

GET_VEHICLE = "/maps.fleetengine.v1.VehicleService/GetVehicle"
UNKNOWN_METHOD = "/maps.fleetengine.v1.VehicleService/NoSuchMethod"
MIB = 1 << 20


# -- helpers ---------------------------------------------------------------------------------


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get_vehicle_message(entity: Entity) -> bytes:
    return h2_raw.grpc_message(fe.GetVehicleRequest.serialize(fe.GetVehicleRequest(name=entity.resource_name())))


def assert_serves(sidecar, new_id, timeout: float = 10.0) -> None:
    """One ordinary call through the sidecar succeeds."""
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    with grpc.insecure_channel(sidecar.address) as channel:
        stub = channel.unary_unary(GET_VEHICLE, request_serializer=fe.GetVehicleRequest.serialize,
                                   response_deserializer=fe.Vehicle.deserialize)
        assert stub(fe.GetVehicleRequest(name=vehicle.resource_name()), timeout=timeout).name == vehicle.resource_name()


def assert_twenty_padded_calls_succeed(sidecar, new_id) -> None:
    """Twenty concurrent calls from a well-behaved client, each answered with 64 KiB more."""
    with grpc.insecure_channel(sidecar.address) as channel:
        stub = channel.unary_unary(GET_VEHICLE, request_serializer=fe.GetVehicleRequest.serialize,
                                   response_deserializer=fe.Vehicle.deserialize)
        vehicles = [Entity(PROVIDER_ID, VEHICLE, new_id("pad-")) for _ in range(20)]
        futures = [stub.future(fe.GetVehicleRequest(name=v.resource_name()), timeout=5) for v in vehicles]
        names = [future.result().name for future in futures]
    assert names == [v.resource_name() for v in vehicles]


def grpc_status(connection: h2_raw.H2Connection, stream_id: int, timeout: float = 5.0) -> int | str | None:
    """The grpc-status the stream ended with, "reset" for RST_STREAM, "end" for an end without
    one, or None when the stream did not end in time (a GOAWAY does not end it)."""
    end = connection.wait_for(
        lambda f: f.stream_id == stream_id and (f.type == h2_raw.RST_STREAM or (f.type in (h2_raw.HEADERS, h2_raw.DATA) and f.flags & h2_raw.END_STREAM)),
        timeout)
    if end is None:
        return None
    if end.type == h2_raw.RST_STREAM:
        return "reset"
    status = end.header("grpc-status")
    return int(status) if status is not None else "end"


def send_windowed(connection: h2_raw.H2Connection, stream_id: int, total: int, *, stall: float = 1.0,
                  body: bytes | None = None, end_stream: bool = False, frame_size: int = 16_384) -> tuple[int, bool]:
    """Sends up to `total` bytes of DATA (zeros, or `body`) on `stream_id` as flow control
    allows (the sidecar's WINDOW_UPDATEs), in frames of at most 16 KiB, the last with END_STREAM
    if `end_stream`; stops when the stream is reset or no credit arrives for `stall` seconds.
    Returns (bytes sent, stream reset)."""
    connection_window = stream_window = 65_535
    if body is not None:
        total = len(body)
    sent, zeros = 0, b"\0" * frame_size
    last_progress = time.monotonic()
    while sent < total:
        while True:  # take whatever frames are there without blocking
            try:
                received = connection.read_frame(time.monotonic() + (0 if min(connection_window, stream_window) > 0 else 0.05))
            except h2_raw.ConnectionClosed:
                return sent, True
            if received is None:
                break
            if received.type == h2_raw.WINDOW_UPDATE:
                credit = struct.unpack(">I", received.payload[:4])[0] & 0x7FFFFFFF
                if received.stream_id == 0:
                    connection_window += credit
                elif received.stream_id == stream_id:
                    stream_window += credit
            elif received.stream_id == stream_id and received.type == h2_raw.RST_STREAM:
                return sent, True
            elif received.type == h2_raw.GOAWAY:
                return sent, True
        n = min(len(zeros), connection_window, stream_window, total - sent)
        if n <= 0:
            if time.monotonic() - last_progress > stall:
                return sent, False
            continue
        piece = zeros[:n] if body is None else body[sent:sent + n]
        last = end_stream and sent + n == total
        try:
            connection.send(h2_raw.frame(h2_raw.DATA, h2_raw.END_STREAM if last else 0, stream_id, piece))
        except OSError:
            return sent, True
        sent += n
        connection_window -= n
        stream_window -= n
        last_progress = time.monotonic()
    return sent, False


def admin_address(sidecar) -> str:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        match = re.search(r'admin="?(127\.0\.0\.1:\d+)', sidecar.log_path.read_text(errors="replace"))
        if match:
            return match.group(1)
        time.sleep(0.02)
    raise AssertionError("no admin address in the log:\n" + sidecar.log_tail())


def open_connections(admin: str) -> float:
    with urllib.request.urlopen(f"http://{admin}/metrics", timeout=5) as response:
        text = response.read().decode()
    match = re.search(r"^fleet_token_proxy_open_connections(?:\{[^}]*\})? (\S+)$", text, re.M)
    assert match, "no fleet_token_proxy_open_connections in /metrics"
    return float(match.group(1))


# -- Defect 2: a stream the sidecar answered keeps sending DATA --------------------------------


def test_data_after_a_local_answer_is_reset_and_memory_stays_bounded(sidecar, fleet_engine, new_id):
    before = rss_bytes(sidecar.process.pid)
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, b"".join(
            h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(UNKNOWN_METHOD))))
        sent, reset = send_windowed(connection, 1, 96 * MIB)
        grown = rss_bytes(sidecar.process.pid) - before
    finally:
        connection.close()

    assert reset or sent <= 1 * MIB, f"the sidecar took {sent >> 20} MiB on a stream it had answered"
    assert grown < 20 * MIB, f"sidecar RSS grew by {grown >> 20} MiB"
    assert fleet_engine.records(method=UNKNOWN_METHOD) == []
    assert_serves(sidecar, new_id)


def test_unrouted_stream_holds_at_most_its_first_message(sidecar, fleet_engine, new_id):
    """A length prefix of 2 GiB: the first message can never complete within the bound."""
    before = rss_bytes(sidecar.process.pid)
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, b"".join(
            h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))))
        connection.send(h2_raw.frame(h2_raw.DATA, 0, 1, b"\0" + struct.pack(">I", 0x7FFFFFFF)))
        sent, reset = send_windowed(connection, 1, 32 * MIB)
        grown = rss_bytes(sidecar.process.pid) - before
        status = grpc_status(connection, 1, timeout=2)
    finally:
        connection.close()

    assert reset or status in (8, "reset"), f"no refusal after {sent >> 20} MiB (status {status})"
    assert sent <= 8 * MIB, f"the sidecar took {sent >> 20} MiB before routing"
    assert grown < 20 * MIB, f"sidecar RSS grew by {grown >> 20} MiB"
    assert_serves(sidecar, new_id)


def test_unrouted_streams_of_a_connection_share_one_bound(sidecar, fleet_engine, new_id):
    """Three streams each announce a 4 MB first message and send 3.9 MB of it: the connection's
    bound (8 MiB of unrouted request bytes) refuses the third with RESOURCE_EXHAUSTED."""
    before = rss_bytes(sidecar.process.pid)
    connection = h2_raw.H2Connection(sidecar.address)
    outcomes = []
    try:
        block = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))
        for stream_id in (1, 3, 5):
            connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, stream_id, block))
            body = b"\0" + struct.pack(">I", 4_000_000) + b"\0" * 3_900_000
            outcomes.append(send_windowed(connection, stream_id, 0, body=body, stall=0.5))
        status = grpc_status(connection, 5, timeout=2)
        grown = rss_bytes(sidecar.process.pid) - before
    finally:
        connection.close()
    assert [reset for _, reset in outcomes[:2]] == [False, False], outcomes
    assert status == 8 or outcomes[2][1], f"the third stream was not refused: {outcomes[2]}, status {status}"
    assert grown < 40 * MIB, f"sidecar RSS grew by {grown >> 20} MiB"
    assert_serves(sidecar, new_id)


def test_process_wide_buffer_budget_refuses_new_work_and_is_given_back(sidecar_factory, new_id):
    """--max-buffered-bytes 65536: a stream announcing a 1 MB first message is refused with
    RESOURCE_EXHAUSTED once it passes the process-wide budget (well under the stream's and the
    connection's own bounds); the bytes are given back, so ordinary calls go on."""
    sidecar = sidecar_factory(extra_args=("--max-buffered-bytes", "65536"))
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, b"".join(
            h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))))
        body = b"\0" + struct.pack(">I", 1_000_000) + b"\0" * 200_000
        sent, reset = send_windowed(connection, 1, 0, body=body, stall=0.5)
        status = grpc_status(connection, 1, timeout=2)
    finally:
        connection.close()
    assert status == 8 or reset, f"no refusal after {sent} bytes (status {status})"
    for _ in range(3):
        assert_serves(sidecar, new_id)


def test_body_waiting_for_a_token_is_not_credited(sidecar, provider, fleet_engine, new_id):
    """While the token is being fetched the client may fill the stream's window, not more."""
    provider.delay = 2
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, b"".join(
            h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))))
        connection.send(h2_raw.frame(h2_raw.DATA, 0, 1, get_vehicle_message(vehicle)))
        sent, _ = send_windowed(connection, 1, 16 * MIB, stall=0.5)
    finally:
        connection.close()
    assert sent <= 1 * MIB, f"the sidecar credited {sent >> 20} MiB while it waited for the token"
    assert_serves(sidecar, new_id)


def test_first_message_in_small_frames_is_read_once(sidecar, fleet_engine, new_id):
    """A 4 MB first message in 1 KiB DATA frames: the sidecar waits for the length its prefix
    announced instead of re-reading (and copying) everything received on every frame."""
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    request = fe.GetVehicleRequest.serialize(fe.GetVehicleRequest(name=vehicle.resource_name()))
    padding = 4_000_000
    # Unknown field 999 (length-delimited), skipped by readers: the message stays a valid request.
    message = h2_raw.grpc_message(request + bytes([0xBA, 0x3E]) + _varint(padding) + b"p" * padding)
    cpu_before = cpu_seconds(sidecar.process.pid)
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        block = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, block))
        sent, reset = send_windowed(connection, 1, 0, body=message, end_stream=True, frame_size=1024)
        status = grpc_status(connection, 1, timeout=10)
    finally:
        connection.close()
    cpu = cpu_seconds(sidecar.process.pid) - cpu_before
    assert (sent, reset) == (len(message), False)
    assert status == 0, status
    assert cpu < 1.5, f"routing a 4 MB first message in 1 KiB frames took {cpu:.2f} s of sidecar CPU"


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def test_stream_that_never_completes_its_first_message_is_answered_after_the_head_timeout(sidecar, fleet_engine, new_id):
    """No grpc-timeout, three bytes of a message, then silence: after `headTimeout` (10 s, the
    sidecar's default; the slowest test here) the stream is answered and its bytes freed,
    rather than held for as long as the client keeps the connection."""
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        block = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))
        sent = time.monotonic()
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, block) + h2_raw.frame(h2_raw.DATA, 0, 1, b"\0\0\0"))
        status = grpc_status(connection, 1, timeout=13)
        waited = time.monotonic() - sent
    finally:
        connection.close()
    assert status == 4, f"the stream was not answered (status {status})"
    assert 9.5 <= waited <= 12, f"answered after {waited:.1f} s, want about 10 s"
    assert_serves(sidecar, new_id)


# -- Defect 3: preface + SETTINGS + GOAWAY in one write --------------------------------------


def test_connections_that_end_in_their_first_read_do_not_leak_slots(sidecar_factory, new_id):
    sidecar = sidecar_factory(extra_args=("--admin-listen", "127.0.0.1:0"))
    admin = admin_address(sidecar)
    host, port = sidecar.address.rsplit(":", 1)
    burst = h2_raw.PREFACE + h2_raw.frame(h2_raw.SETTINGS, 0, 0) + h2_raw.frame(h2_raw.GOAWAY, 0, 0, struct.pack(">II", 0, 0))
    for _ in range(200):
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(burst)
            s.settimeout(2)
            try:
                while s.recv(65536):
                    pass
            except OSError:
                pass

    deadline = time.monotonic() + 5
    while open_connections(admin) != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert open_connections(admin) == 0
    assert_serves(sidecar, new_id)
    sidecar.stop()


# -- Defect 4: a client that never reads must not wedge the shared upstream connection -------


def test_stuck_client_does_not_wedge_the_shared_upstream_connection(sidecar_factory, new_id):
    sidecar = sidecar_factory()
    connection = h2_raw.H2Connection(sidecar.address)
    # SETTINGS_INITIAL_WINDOW_SIZE = 0: the sidecar may send this client no DATA at all.
    connection.send(h2_raw.frame(h2_raw.SETTINGS, 0, 0, struct.pack(">HI", 0x4, 0)))
    try:
        streams = [2 * i + 1 for i in range(64)]
        for stream_id in streams:
            vehicle = Entity(PROVIDER_ID, VEHICLE, new_id("pad-"))
            connection.send_request(stream_id, connection.grpc_headers(GET_VEHICLE), get_vehicle_message(vehicle))
        time.sleep(1.5)  # the answers arrive at the sidecar and stay there
        for stream_id in streams:
            connection.send(h2_raw.frame(h2_raw.RST_STREAM, 0, stream_id, struct.pack(">I", h2_raw.CANCEL)))

        assert_twenty_padded_calls_succeed(sidecar, new_id)
    finally:
        connection.close()
        sidecar.stop()


def test_clients_that_never_read_do_not_exhaust_the_upstream_connection_window(sidecar_factory, new_id):
    """Five connections with SETTINGS_INITIAL_WINDOW_SIZE=0 keep 90 calls each whose 64 KiB
    answers the sidecar can never deliver (450 × 64 KiB, more than any fixed upstream connection
    window): well-behaved calls must still get through."""
    sidecar = sidecar_factory()
    stuck = []
    try:
        for _ in range(5):
            connection = h2_raw.H2Connection(sidecar.address)
            connection.send(h2_raw.frame(h2_raw.SETTINGS, 0, 0, struct.pack(">HI", 0x4, 0)))
            stuck.append(connection)
            for i in range(90):
                vehicle = Entity(PROVIDER_ID, VEHICLE, new_id("pad-"))
                connection.send_request(2 * i + 1, connection.grpc_headers(GET_VEHICLE), get_vehicle_message(vehicle))
        time.sleep(2)  # the answers arrive at the sidecar and stay there

        assert_twenty_padded_calls_succeed(sidecar, new_id)
    finally:
        for connection in stuck:
            connection.close()
        sidecar.stop()


# -- Defect 5: graceful drain over HTTP/2 -----------------------------------------------------


def test_call_in_flight_at_sigterm_completes_and_new_streams_are_refused(sidecar_factory, provider, fleet_engine, new_id):
    sidecar = sidecar_factory(extra_args=("--drain-timeout", "5"))
    provider.delay = 1.5
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    with grpc.insecure_channel(sidecar.address) as channel:
        stub = channel.unary_unary(GET_VEHICLE, request_serializer=fe.GetVehicleRequest.serialize,
                                   response_deserializer=fe.Vehicle.deserialize)
        future = stub.future(fe.GetVehicleRequest(name=vehicle.resource_name()), timeout=10)
        raw = h2_raw.H2Connection(sidecar.address)
        try:
            raw.send_request(1, raw.grpc_headers(GET_VEHICLE), get_vehicle_message(Entity(PROVIDER_ID, VEHICLE, new_id())))
            time.sleep(0.5)  # both calls wait for their tokens
            sidecar.terminate()
            goaway = raw.wait_for(lambda f: f.type == h2_raw.GOAWAY, timeout=3)
            assert goaway is not None, "no GOAWAY on drain"
            last_stream = struct.unpack(">I", goaway.payload[:4])[0] & 0x7FFFFFFF
            assert last_stream == 1, f"GOAWAY names stream {last_stream}, want 1 (the last one taken)"
            late = Entity(PROVIDER_ID, VEHICLE, new_id())
            raw.send_request(3, raw.grpc_headers(GET_VEHICLE), get_vehicle_message(late))
            assert grpc_status(raw, 1, timeout=5) == 0, "the raw call in flight did not complete OK"
        finally:
            raw.close()
        assert future.result().name == vehicle.resource_name()
    assert sidecar.process.wait(timeout=10) == 0
    assert fleet_engine.records(entity_id=late.id) == [], "a stream opened after GOAWAY was forwarded"


# -- Defect 7: HPACK amplification -----------------------------------------------------------


def _hpack_bomb(connection: h2_raw.H2Connection, stream_id: int, references: int = 20_000) -> bytes:
    """One 4 KB header put in the dynamic table (literal with incremental indexing), then
    referenced `references` times (indexed field 62, the newest dynamic entry)."""
    entry = b"\x40" + h2_raw.hpack_integer(8, 7) + b"x-filler" + h2_raw.hpack_integer(4000, 7) + b"v" * 4000
    head = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))
    block = head + entry + h2_raw.hpack_integer(62, 7, 0x80) * references
    frames, first = b"", True
    while block:
        piece, block = block[:16_000], block[16_000:]
        flags = h2_raw.END_HEADERS | h2_raw.END_STREAM if not block else 0
        if first:
            frames += h2_raw.frame(h2_raw.HEADERS, flags & ~h2_raw.END_HEADERS | (h2_raw.END_HEADERS if not block else 0) | h2_raw.END_STREAM, stream_id, piece)
            first = False
        else:
            frames += h2_raw.frame(h2_raw.CONTINUATION, h2_raw.END_HEADERS if not block else 0, stream_id, piece)
    return frames


def test_hpack_amplification_is_refused_fast(sidecar, fleet_engine, new_id):
    before = rss_bytes(sidecar.process.pid)
    cpu_before = cpu_seconds(sidecar.process.pid)
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        started = time.monotonic()
        streams = [2 * i + 1 for i in range(20)]
        for stream_id in streams:
            connection.send(_hpack_bomb(connection, stream_id))
        outcomes = [grpc_status(connection, stream_id, timeout=5) for stream_id in streams]
        elapsed = time.monotonic() - started
        cpu = cpu_seconds(sidecar.process.pid) - cpu_before
    finally:
        connection.close()
    assert all(outcome in ("reset", 8) for outcome in outcomes) or connection.wait_for(lambda f: f.type == h2_raw.GOAWAY, 0), outcomes
    # Each block expands to 80 MB of header fields: counted as decoded, refused at 32 KiB,
    # nothing is built from the rest (before: ~70 ms of CPU per block building Strings).
    assert cpu < 0.4, f"twenty 80 MB header blocks took {cpu:.2f} s of sidecar CPU to refuse"
    assert elapsed < 3.0, f"twenty 80 MB header blocks took {elapsed:.2f} s to refuse"
    assert rss_bytes(sidecar.process.pid) - before < 20 * MIB
    assert_serves(sidecar, new_id)


def test_too_many_header_fields_are_refused(sidecar, fleet_engine, new_id):
    """150 small fields: under the byte bound, over the field count (`maxHeaderCount`, 100)."""
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        headers = connection.grpc_headers(GET_VEHICLE, *((f"x-f{i}", "v") for i in range(150)))
        connection.send_request(1, headers, get_vehicle_message(vehicle))
        status = grpc_status(connection, 1)
    finally:
        connection.close()
    assert status == "reset", status
    time.sleep(0.3)
    assert fleet_engine.records(entity_id=vehicle.id) == []
    assert_serves(sidecar, new_id)


# -- Defect 11: shutdown under load ----------------------------------------------------------


@pytest.fixture
def crowded_fleet_engine(signing_key):
    """A stand-in Fleet Engine that takes two streams per connection, so calls queue in the
    sidecar's upstream pool."""
    engine = StandInFleetEngine([(signing_key.kid, signing_key.public_key)], max_concurrent_streams=2).start()
    yield engine
    engine.stop()


def test_sigterm_with_many_calls_queued_upstream_exits_cleanly(sidecar_factory, crowded_fleet_engine, provider, new_id):
    """The sidecar's upstream pool opens at most four connections; with two streams each taken,
    further calls wait in the pool. SIGTERM with a short drain, kept open by a REST call waiting
    for its token: the HTTP/2 client connection closes first, then the pool fails its queued
    calls, which must not touch the freed connection."""
    sidecar = sidecar_factory(upstream=f"http://{crowded_fleet_engine.address}", extra_args=("--drain-timeout", "0.5"))
    with grpc.insecure_channel(sidecar.address) as channel:
        stub = channel.unary_unary(GET_VEHICLE, request_serializer=fe.GetVehicleRequest.serialize,
                                   response_deserializer=fe.Vehicle.deserialize)

        def slow_call():
            name = Entity(PROVIDER_ID, VEHICLE, new_id("slow-")).resource_name()
            return stub.future(fe.GetVehicleRequest(name=name), timeout=10)

        futures = [slow_call() for _ in range(4)]  # the first connection: full once it is ready
        for _ in range(3):  # one more connection each, full in turn
            time.sleep(0.4)
            futures += [slow_call() for _ in range(2)]
        time.sleep(0.4)
        futures += [slow_call() for _ in range(20)]  # no room anywhere: these wait in the pool
        time.sleep(0.5)
        provider.delay = 3
        rest = concurrent.futures.ThreadPoolExecutor(1).submit(_rest_get, sidecar, Entity(PROVIDER_ID, VEHICLE, new_id()))
        time.sleep(0.3)
        sidecar.terminate()
        status = sidecar.process.wait(timeout=10)
        rest.exception()
        for future in futures:
            try:
                future.result()
            except grpc.RpcError:
                pass
    assert status == 0, f"exit status {status}:\n{sidecar.log_tail()}"


def test_queued_calls_of_a_closed_client_are_dropped_when_the_upstream_breaks(sidecar_factory, crowded_fleet_engine, new_id):
    """Calls of a client connection that has closed still wait in the upstream pool; when the
    upstream connections break, the pool dials again for them or fails them: neither may touch
    the freed client connection."""
    sidecar = sidecar_factory(upstream=f"http://{crowded_fleet_engine.address}")
    serialize, deserialize = fe.GetVehicleRequest.serialize, fe.Vehicle.deserialize
    with grpc.insecure_channel(sidecar.address) as first:
        stub = first.unary_unary(GET_VEHICLE, request_serializer=serialize, response_deserializer=deserialize)

        def slow_call(stub):
            name = Entity(PROVIDER_ID, VEHICLE, new_id("slow-")).resource_name()
            return stub.future(fe.GetVehicleRequest(name=name), timeout=10)

        futures = [slow_call(stub) for _ in range(4)]
        for _ in range(3):
            time.sleep(0.4)
            futures += [slow_call(stub) for _ in range(2)]
        time.sleep(0.4)
        # Its own TCP connection (grpc shares subchannels between channels by default).
        second = grpc.insecure_channel(sidecar.address, options=[("grpc.use_local_subchannel_pool", 1)])
        queued = [slow_call(second.unary_unary(GET_VEHICLE, request_serializer=serialize, response_deserializer=deserialize))
                  for _ in range(10)]
        time.sleep(0.5)  # queued in the pool
        second.close()  # that client connection closes; its calls stay queued
        time.sleep(0.3)
        crowded_fleet_engine.stop()  # every upstream connection breaks
        for future in futures + queued:
            try:
                future.result()
            except grpc.RpcError:
                pass
        time.sleep(0.5)
    assert sidecar.running, f"the sidecar died (status {sidecar.process.returncode}):\n{sidecar.log_tail()}"
    assert sidecar.stop() == 0


def _rest_get(sidecar, entity: Entity) -> None:
    with urllib.request.urlopen(f"http://{sidecar.address}/v1/{entity.resource_name()}", timeout=10) as response:
        response.read()


# -- Defect 14: trailers, authorization ------------------------------------------------------


def test_client_trailers_and_authorization_are_never_forwarded(sidecar, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        headers = connection.grpc_headers(GET_VEHICLE, ("authorization", "Bearer client-token"), ("x-test-call", "trailers"))
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, b"".join(h2_raw.hpack_literal(n, v) for n, v in headers)))
        connection.send(h2_raw.frame(h2_raw.DATA, 0, 1, get_vehicle_message(vehicle)))
        trailers = [("x-client-trailer", "1"), ("authorization", "Bearer trailer-token"), ("grpc-timeout", "1m")]
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS | h2_raw.END_STREAM, 1,
                                     b"".join(h2_raw.hpack_literal(n, v) for n, v in trailers)))
        status = grpc_status(connection, 1)
    finally:
        connection.close()
    assert status == 0
    [record] = fleet_engine.wait_for_records(entity_id=vehicle.id)
    assert record.authorization_count == 1
    assert record.header("x-client-trailer") is None, "a client trailer was forwarded as a header"
    assert [v for k, v in record.metadata if k == "grpc-timeout"] in ([], [record.header("grpc-timeout")])


@pytest.mark.parametrize("name, value", [
    ("x-http-method-override", "DELETE"), ("X-HTTP-Method", "DELETE"), ("x-method-override", "DELETE"),
    ("x-goog-api-key", "client-key"),
])
def test_method_overrides_and_client_credentials_in_metadata_are_refused(sidecar, fleet_engine, new_id, name, value):
    """docs/CONTRACT.md §7: credentials come only from the sidecar, and the call runs the method it was
    routed by; over gRPC as over HTTP/1.1 such a call is INVALID_ARGUMENT and never forwarded."""
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    with grpc.insecure_channel(sidecar.address) as channel:
        stub = channel.unary_unary(GET_VEHICLE, request_serializer=fe.GetVehicleRequest.serialize,
                                   response_deserializer=fe.Vehicle.deserialize)
        with pytest.raises(grpc.RpcError) as refused:
            stub(fe.GetVehicleRequest(name=vehicle.resource_name()), metadata=[(name.lower(), value)], timeout=5)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert fleet_engine.records(entity_id=vehicle.id) == []
    assert_serves(sidecar, new_id)


def test_resets_during_token_fetches(sidecar, provider, fleet_engine, new_id):
    provider.delay = 1
    vehicles = [Entity(PROVIDER_ID, VEHICLE, new_id()) for _ in range(20)]
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        for i, vehicle in enumerate(vehicles):
            connection.send_request(2 * i + 1, connection.grpc_headers(GET_VEHICLE), get_vehicle_message(vehicle))
        time.sleep(0.2)
        for i in range(len(vehicles)):
            connection.send(h2_raw.frame(h2_raw.RST_STREAM, 0, 2 * i + 1, struct.pack(">I", h2_raw.CANCEL)))
        time.sleep(1.5)
    finally:
        connection.close()
    assert all(fleet_engine.records(entity_id=v.id) == [] for v in vehicles), "a reset call was forwarded"
    assert_serves(sidecar, new_id)


# -- floods ----------------------------------------------------------------------------------


def test_rapid_reset_flood(sidecar, fleet_engine, new_id):
    before = rss_bytes(sidecar.process.pid)
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        burst = b""
        for i in range(2000):
            stream_id = 2 * i + 1
            vehicle = Entity(PROVIDER_ID, VEHICLE, "flood" + str(i))
            block = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))
            burst += h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, stream_id, block)
            burst += h2_raw.frame(h2_raw.DATA, h2_raw.END_STREAM, stream_id, get_vehicle_message(vehicle))
            burst += h2_raw.frame(h2_raw.RST_STREAM, 0, stream_id, struct.pack(">I", h2_raw.CANCEL))
        try:
            connection.send(burst)
        except OSError:
            pass
        connection.wait_for(lambda f: f.type == h2_raw.GOAWAY, timeout=2)
    finally:
        connection.close()
    assert rss_bytes(sidecar.process.pid) - before < 20 * MIB
    assert_serves(sidecar, new_id)


def test_continuation_flood_is_cut(sidecar, new_id):
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        head = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))
        data = h2_raw.frame(h2_raw.HEADERS, 0, 1, head)
        data += b"".join(h2_raw.frame(h2_raw.CONTINUATION, 0, 1, h2_raw.hpack_literal("x-c", "y" * 1000)) for _ in range(2000))
        try:
            connection.send(data)
        except OSError:
            pass
        goaway = connection.wait_for(lambda f: f.type == h2_raw.GOAWAY, timeout=5)
        if goaway is None:  # the GOAWAY may be lost to the TCP reset of a close with unread input
            with pytest.raises(h2_raw.ConnectionClosed):
                connection.read_frame(time.monotonic() + 5)
    finally:
        connection.close()
    assert_serves(sidecar, new_id)


# -- the limits H2Limits sets explicitly (Sources/FleetTokenProxy/HTTP2/H2Limits.swift) ---------

ENHANCE_YOUR_CALM = 0xB
MAX_SETTINGS_ENTRIES = 32  # H2Limits.maxSettingsEntries
RESET_BURST = 200  # H2Limits.streamResetBurst
MAX_CONTINUATIONS = 8  # H2Limits.maxContinuations


def _settings(entries: int) -> bytes:
    """One SETTINGS frame of `entries` entries, all of an id no one defines (ignored, but counted)."""
    return h2_raw.frame(h2_raw.SETTINGS, 0, 0, b"".join(struct.pack(">HI", 0x7F00 + i, i) for i in range(entries)))


def test_settings_frame_at_the_entry_limit_is_acknowledged(sidecar, new_id):
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(_settings(MAX_SETTINGS_ENTRIES))
        deadline = time.monotonic() + 5
        # One ACK for the client's first (empty) SETTINGS, one for this.
        while sum(1 for f in connection.frames if f.type == h2_raw.SETTINGS and f.flags & h2_raw.ACK) < 2:
            assert connection.read_frame(deadline) is not None, [(f.type, f.flags) for f in connection.frames]
        assert connection.wait_for(lambda f: f.type == h2_raw.GOAWAY, timeout=0.5) is None
    finally:
        connection.close()
    assert_serves(sidecar, new_id)


def test_settings_frame_past_the_entry_limit_ends_the_connection_calmly(sidecar, new_id):
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(_settings(MAX_SETTINGS_ENTRIES + 1))
        goaway = connection.wait_for(lambda f: f.type == h2_raw.GOAWAY, timeout=5)
    finally:
        connection.close()
    assert goaway is not None, "no GOAWAY"
    assert goaway.error_code == ENHANCE_YOUR_CALM, goaway.error_code
    assert_serves(sidecar, new_id)


def test_ping_flood_from_a_client_that_never_reads_is_cut(sidecar, new_id):
    """PINGs whose ACKs the client never reads: once the socket and the sidecar's 256 KiB of
    output are full, ACKs queue in nghttp2, and past H2Limits.maxOutboundAcks the connection
    ends, with the sidecar's memory bounded."""
    before = rss_bytes(sidecar.process.pid)
    host, port = sidecar.address.rsplit(":", 1)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    sock.settimeout(10)
    sock.connect((host, int(port)))
    pings = b"".join(h2_raw.frame(h2_raw.PING, 0, 0, struct.pack(">Q", i)) for i in range(4096))
    sent, cut = 0, False
    try:
        sock.sendall(h2_raw.PREFACE + h2_raw.frame(h2_raw.SETTINGS, 0, 0))
        while sent < 64 * MIB:
            sock.sendall(pings)
            sent += len(pings)
    except (ConnectionResetError, BrokenPipeError):
        cut = True
    except socket.timeout:
        pass  # the sidecar stopped reading: reported below
    finally:
        sock.close()
    assert cut, f"{sent} bytes of PINGs were taken without the connection ending"
    assert sent < 32 * MIB, f"the connection ended only after {sent} bytes of PINGs"
    assert rss_bytes(sidecar.process.pid) - before < 20 * MIB
    assert_serves(sidecar, new_id)


def _block_in_frames(connection: h2_raw.H2Connection, frames: int) -> bytes:
    """A gRPC request head split over HEADERS and `frames - 1` CONTINUATIONs (HPACK allows a
    block to be cut anywhere)."""
    block = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))
    size = -(-len(block) // frames)
    pieces = [block[i * size:(i + 1) * size] for i in range(frames)]
    assert all(pieces), "the block is too small to cut that often"
    out = h2_raw.frame(h2_raw.HEADERS, 0, 1, pieces[0])
    for i, piece in enumerate(pieces[1:], start=2):
        out += h2_raw.frame(h2_raw.CONTINUATION, h2_raw.END_HEADERS if i == frames else 0, 1, piece)
    return out


def test_header_block_with_the_most_continuations_allowed_is_served(sidecar, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(_block_in_frames(connection, 1 + MAX_CONTINUATIONS)
                        + h2_raw.frame(h2_raw.DATA, h2_raw.END_STREAM, 1, get_vehicle_message(vehicle)))
        status = grpc_status(connection, 1, timeout=10)
    finally:
        connection.close()
    assert status == 0, status


def test_header_block_with_one_continuation_too_many_ends_the_connection(sidecar, new_id):
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(_block_in_frames(connection, 2 + MAX_CONTINUATIONS))
        with pytest.raises(h2_raw.ConnectionClosed):
            while connection.read_frame(time.monotonic() + 5) is not None:
                pass
            pytest.fail("the connection is still open")
    finally:
        connection.close()
    assert_serves(sidecar, new_id)


def _headers_then_reset(connection: h2_raw.H2Connection, streams: range) -> bytes:
    block = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE))
    return b"".join(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 2 * i + 1, block)
                    + h2_raw.frame(h2_raw.RST_STREAM, 0, 2 * i + 1, struct.pack(">I", h2_raw.CANCEL)) for i in streams)


def test_resets_within_the_burst_leave_the_connection_serving(sidecar, fleet_engine, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        connection.send(_headers_then_reset(connection, range(RESET_BURST - 20)))
        stream_id = 2 * RESET_BURST + 1
        connection.send_request(stream_id, connection.grpc_headers(GET_VEHICLE), get_vehicle_message(vehicle))
        status = grpc_status(connection, stream_id, timeout=10)
        goaway = connection.wait_for(lambda f: f.type == h2_raw.GOAWAY, timeout=0)
    finally:
        connection.close()
    assert goaway is None, goaway.error_code
    assert status == 0, status


def test_resets_past_the_burst_get_goaway(sidecar, new_id):
    """A rapid reset (CVE-2023-44487): HEADERS then RST_STREAM, faster than H2Limits allows."""
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        try:
            connection.send(_headers_then_reset(connection, range(RESET_BURST + 50)))
        except OSError:
            pass
        goaway = connection.wait_for(lambda f: f.type == h2_raw.GOAWAY, timeout=5)
    finally:
        connection.close()
    assert goaway is not None, "no GOAWAY"
    assert goaway.error_code == h2_raw.INTERNAL_ERROR, goaway.error_code
    last_stream = struct.unpack(">I", goaway.payload[:4])[0] & 0x7FFFFFFF
    assert last_stream <= 2 * (RESET_BURST + 50) + 1, last_stream
    assert_serves(sidecar, new_id)


# -- first-message edge cases ----------------------------------------------------------------


def _first_message_case(sidecar, headers_extra, body: bytes) -> int | str | None:
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        block = b"".join(h2_raw.hpack_literal(n, v) for n, v in connection.grpc_headers(GET_VEHICLE, *headers_extra))
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, block))
        send_windowed(connection, 1, 0, body=body, end_stream=True)
        return grpc_status(connection, 1)
    finally:
        connection.close()


def test_length_prefix_beyond_the_data_then_end_stream(sidecar, new_id):
    assert _first_message_case(sidecar, (), b"\0" + struct.pack(">I", 100) + b"\x0a\x02ab") == 3
    assert_serves(sidecar, new_id)


def test_compressed_flag_without_grpc_encoding(sidecar, new_id):
    vehicle = Entity(PROVIDER_ID, VEHICLE, new_id())
    payload = fe.GetVehicleRequest.serialize(fe.GetVehicleRequest(name=vehicle.resource_name()))
    assert _first_message_case(sidecar, (), h2_raw.grpc_message(payload, compressed=True)) in (3, 12)
    assert_serves(sidecar, new_id)


def test_gzip_bomb_first_message(sidecar, fleet_engine, new_id):
    before = rss_bytes(sidecar.process.pid)
    bomb = gzip.compress(b"\0" * (256 * MIB), compresslevel=9)
    status = _first_message_case(sidecar, (("grpc-encoding", "gzip"),), h2_raw.grpc_message(bomb, compressed=True))
    assert status in (3, 8), status
    assert rss_bytes(sidecar.process.pid) - before < 40 * MIB
    assert_serves(sidecar, new_id)


def test_entity_field_twice(sidecar, fleet_engine, new_id):
    """Protobuf keeps the last `name`; the sidecar must not fetch a token for the first one and
    forward a request Fleet Engine reads as the second."""
    first, second = Entity(PROVIDER_ID, VEHICLE, new_id()), Entity(PROVIDER_ID, VEHICLE, new_id())
    one = fe.GetVehicleRequest.serialize(fe.GetVehicleRequest(name=first.resource_name()))
    two = fe.GetVehicleRequest.serialize(fe.GetVehicleRequest(name=second.resource_name()))
    status = _first_message_case(sidecar, (), h2_raw.grpc_message(one + two))
    if status == 0:
        [record] = fleet_engine.wait_for_records(entity_id=second.id)
        assert record.outcome == "accepted"
    else:
        assert status == 3, status
    assert_serves(sidecar, new_id)
