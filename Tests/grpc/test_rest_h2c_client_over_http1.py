"""REST calls from HTTP/2 (h2c) clients over the HTTP/1.1 upstream (docs/CONTRACT.md §6): with
`--upstream-protocol http1.1`, and with `auto` once an `https` upstream turned out HTTP/1.1-only,
each stream becomes exactly one HTTP/1.1 request with one `Authorization`, and the answer comes
back as HTTP/2; gRPC keeps going over HTTP/2. With `auto` to an `http://` upstream, h2c clients'
REST stays on h2c."""
from __future__ import annotations

import concurrent.futures
import socket
import subprocess
import time

import grpc
import h2.config
import h2.connection
import h2.events
import pytest
from google.maps import fleetengine_v1 as fe
from google.maps.fleetengine_v1.services.vehicle_service.transports import VehicleServiceGrpcTransport

import h2_raw
from conftest import PROVIDER_ID
from test_rest_over_h2 import tls_engine, tls_sidecar, upstream_connections_opened, vehicle
from standin_rest_h2 import StandInRESTOverH2


def h2c_call(sidecar, method: str, path: str, body_parts: list[bytes] = (), headers=(),
             pause: float = 0.0, read_pause: float = 0.0) -> tuple[int, dict[str, str], bytes]:
    """One REST call over h2c with prior knowledge; the body goes as one DATA frame per part
    (each ≤ 16 KiB, all within the first window), with no content-length, `pause` seconds after
    the first part (so the sidecar has sent the head before the body ends); the answer is read
    `read_pause` seconds after its head (so the sidecar holds what the client has not taken)."""
    host, port = sidecar.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        fields = [(":method", method), (":path", path), (":scheme", "http"), (":authority", sidecar.address), *headers]
        conn.send_headers(1, fields, end_stream=not body_parts)
        s.sendall(conn.data_to_send())
        for i, part in enumerate(body_parts):
            conn.send_data(1, part, end_stream=i == len(body_parts) - 1)
            s.sendall(conn.data_to_send())
            if i == 0:
                time.sleep(pause)
        status, answer_fields, body = 0, {}, b""
        while True:
            data = s.recv(65536)
            assert data, "the sidecar closed before the answer ended"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    answer_fields = dict(event.headers)
                    status = int(answer_fields[":status"])
                    time.sleep(read_pause)
                elif isinstance(event, h2.events.DataReceived):
                    body += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, 1)
                elif isinstance(event, h2.events.StreamReset):
                    raise AssertionError(f"stream reset: {event.error_code}")
                elif isinstance(event, h2.events.StreamEnded):
                    return status, answer_fields, body
            s.sendall(conn.data_to_send())


def curl_h2c(sidecar, method: str, path: str, *args: str, stdin: bytes | None = None) -> tuple[str, str]:
    """One call by curl over h2c with prior knowledge: (HTTP version to the client, status)."""
    out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_version} %{http_code}", "--http2-prior-knowledge",
                          "-X", method, *args, f"http://{sidecar.address}{path}"],
                         input=stdin, capture_output=True, timeout=20, check=True).stdout.decode()
    version, status = out.split()
    return version, status


def concurrent_h2c(sidecar, calls: list[tuple[str, str, bytes | None]]) -> list[tuple[str, str]]:
    def one(call):
        method, path, body = call
        return curl_h2c(sidecar, method, path, *(("--data-binary", body.decode()) if body is not None else ()))
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(calls)) as pool:
        return list(pool.map(one, calls))


def test_pinned_http11_carries_h2c_clients_rest_by_http1_and_grpc_by_h2(sidecar_factory, fleet_engine, new_id):
    sidecar = sidecar_factory(extra_args=("--upstream-protocol", "http1.1"))
    ids = [new_id("v-") for _ in range(4)]
    h2_before = fleet_engine.mux.connections_opened("h2")
    answers = concurrent_h2c(sidecar, [("GET", vehicle(ids[0]), None), ("PUT", vehicle(ids[1]), b'{"a":1}'),
                                       ("DELETE", vehicle(ids[2]), None), ("PUT", vehicle(ids[3]), b"{}")])
    assert answers == [("2", "200")] * 4, "answered over HTTP/2 to the client"
    rest = [r for r in fleet_engine.records() if r.method.startswith("REST ") and r.entity and r.entity.id in ids]
    assert sorted(r.method for r in rest) == ["REST DELETE", "REST GET", "REST PUT", "REST PUT"]
    assert all(r.authorization_count == 1 for r in rest)
    assert {r.entity.id: r.request_bytes for r in rest}[ids[1]] == 7
    assert fleet_engine.mux.connections_opened("http1") >= 1, "REST went on HTTP/1.1 connections"
    assert fleet_engine.mux.connections_opened("h2") == h2_before, "no REST call opened an HTTP/2 connection"
    # gRPC needs HTTP/2 end to end: it still goes over h2c.
    with grpc.insecure_channel(sidecar.address) as channel:
        client = fe.VehicleServiceClient(transport=VehicleServiceGrpcTransport(channel=channel))
        entity_id = new_id("v-")
        name = f"providers/{PROVIDER_ID}/vehicles/{entity_id}"
        assert client.get_vehicle(fe.GetVehicleRequest(name=name), retry=None, timeout=10).name == name
    assert [r.method for r in fleet_engine.records(entity_id=entity_id)] == ["VehicleService/GetVehicle"]
    assert fleet_engine.mux.connections_opened("h2") >= 1


@pytest.fixture
def pinned_http11(sidecar_factory, signing_key, pki, tmp_path):
    """A TLS stand-in offering h2 and http/1.1, and a sidecar with `--upstream-protocol http1.1`."""
    engine = tls_engine(signing_key, pki, tmp_path, ["h2", "http/1.1"])
    try:
        yield engine, tls_sidecar(sidecar_factory, engine, pki, "--upstream-protocol", "http1.1")
    finally:
        engine.stop()


def test_pinned_http11_streams_a_body_of_unknown_length_chunked(pinned_http11, new_id):
    engine, sidecar = pinned_http11
    parts = [b"a" * 1000, b"b" * 16_000, b"c" * 16_000, b"d" * 5]
    status, fields, answer = h2c_call(sidecar, "PUT", vehicle(new_id("v-")), parts, pause=1.0,
                                      headers=[("content-type", "application/json"), ("x-custom", "kept"), ("te", "trailers")])
    assert status == 200, answer
    assert fields["x-standin"] == "rest-http1" and "content-length" in fields
    assert b'"bodyBytes": 33005' in answer
    [seen] = engine.requests
    assert seen.stream == 0, "over HTTP/1.1"
    assert seen.body == b"".join(parts)
    assert seen.header("transfer-encoding") == ["chunked"] and seen.header("content-length") == []
    assert seen.header("host") == [engine.address]
    assert seen.header("x-custom") == ["kept"] and seen.header("te") == []
    assert len(seen.header("authorization")) == 1
    # A large body with a length streams by its Content-Length.
    body = b"y" * 300_000
    assert curl_h2c(sidecar, "PUT", vehicle(new_id("v-")), "--data-binary", "@-", stdin=body) == ("2", "200")
    assert engine.requests[1].body == body and engine.requests[1].header("content-length") == ["300000"]


def test_a_large_chunked_answer_streams_back_within_the_client_window(pinned_http11, new_id):
    engine, sidecar = pinned_http11
    # 1 MiB through a 64 KiB client window: the sidecar pauses reading the upstream while
    # the client is behind, and the answer arrives whole and de-chunked.
    status, fields, answer = h2c_call(sidecar, "GET", vehicle(new_id("bigchunked-")), read_pause=0.5)
    assert status == 200
    assert "content-length" not in fields and "transfer-encoding" not in fields
    assert answer == b"".join(bytes([0x61 + i % 26]) * 0x4000 for i in range(64))
    status, _, _ = h2c_call(sidecar, "GET", vehicle(new_id("v-")))
    assert status == 200
    assert len({r.connection for r in engine.requests}) == 1, "the connection went back to the pool after the answer"


def test_a_bodiless_401_is_retried_once_with_a_fresh_token(pinned_http11, new_id):
    engine, sidecar = pinned_http11
    status, _, answer = h2c_call(sidecar, "PUT", vehicle(new_id("once401-")), [b'{"a":1}'])
    assert status == 200, answer
    assert [r.status for r in engine.requests] == [401, 200]
    assert all(r.body == b'{"a":1}' and r.stream == 0 for r in engine.requests)
    # The 401's connection went back to the pool: the retry reused it.
    assert len({r.connection for r in engine.requests}) == 1


def test_a_401_with_fleet_engines_json_body_is_retried_once_too(pinned_http11, new_id):
    # docs/CONTRACT.md §5: a 401 is never passed on the first time, body or not (the body goes
    # with the abandoned upstream connection).
    engine, sidecar = pinned_http11
    status, _, answer = h2c_call(sidecar, "PUT", vehicle(new_id("once401body-")), [b'{"a":1}'])
    assert status == 200, answer
    assert [r.status for r in engine.requests] == [401, 200]
    assert all(r.body == b'{"a":1}' for r in engine.requests)


def test_a_401_with_a_body_over_the_http2_upstream_is_retried_once(sidecar_factory, signing_key, new_id):
    engine = StandInRESTOverH2([(signing_key.kid, signing_key.public_key)]).start()
    try:
        sidecar = sidecar_factory(upstream=f"http://{engine.address}")
        status, _, answer = h2c_call(sidecar, "PUT", vehicle(new_id("once401-")), [b'{"a":1}'])
        assert status == 200, answer
        assert [r.status for r in engine.requests] == [401, 200]
        assert all(r.body == b'{"a":1}' and r.stream != 0 for r in engine.requests)
    finally:
        engine.stop()


def test_bytes_past_the_declared_length_never_become_a_second_request(pinned_http11, new_id):
    engine, sidecar = pinned_http11
    connection = h2_raw.H2Connection(sidecar.address)
    try:
        headers = [(":method", "PUT"), (":scheme", "http"), (":path", vehicle(new_id("v-"))), (":authority", sidecar.address),
                   ("content-length", "3")]
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, b"".join(h2_raw.hpack_literal(n, v) for n, v in headers)))
        connection.send(h2_raw.frame(h2_raw.DATA, 0, 1, b"abc"))
        time.sleep(1.0)  # forwarded by now, framed by the declared length, but for its last byte
        smuggled = f"PUT {vehicle(new_id('v-'))} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n".encode()
        connection.send(h2_raw.frame(h2_raw.DATA, h2_raw.END_STREAM, 1, smuggled))
        assert connection.wait_for_stream_end(1, timeout=10) is not None
    finally:
        connection.close()
    time.sleep(0.5)
    # The declared-length request's last byte waited for END_STREAM; the longer body broke the
    # exchange, so the upstream was left a request cut short: no request at all, and never the
    # bytes past the length.
    assert [r.body for r in engine.requests] == [], "no request"


@pytest.mark.parametrize("alpn", [["http/1.1"], None], ids=["http1.1-only", "no-alpn"])
def test_auto_against_an_http11_only_tls_upstream_answers_h2c_clients_rest(sidecar_factory, signing_key, pki, tmp_path,
                                                                             new_id, alpn):
    engine = tls_engine(signing_key, pki, tmp_path, alpn)
    try:
        sidecar = tls_sidecar(sidecar_factory, engine, pki)
        # The first burst races the warm-up connection's ALPN answer: calls waiting on it go
        # again by HTTP/1.1 with nothing lost; the second finds the route settled.
        first = [("PUT" if i % 2 else "GET", vehicle(new_id("v-")), b'{"x":1}' if i % 2 else None) for i in range(8)]
        assert concurrent_h2c(sidecar, first) == [("2", "200")] * 8, [(r.header(":path"), r.status) for r in engine.requests]
        second = [("POST", vehicle(new_id("v-"), ":updateLocation"), b"{}") for _ in range(4)]
        assert concurrent_h2c(sidecar, second) == [("2", "200")] * 4
        assert len(engine.requests) == 12, "each call reached the upstream once"
        assert all(r.stream == 0 and r.status == 200 for r in engine.requests), "all over HTTP/1.1"
        assert sorted(r.header(":path")[0] for r in engine.requests) == sorted(p for _, p, _ in first + second)
        bodies = {r.header(":path")[0]: r.body for r in engine.requests}
        assert all(bodies[p] == (b or b"") for _, p, b in first + second)
        opened = upstream_connections_opened(sidecar)
        assert opened["h2"] == 1 and opened["http1.1"] >= 1
    finally:
        engine.stop()


def test_auto_over_http_keeps_h2c_clients_rest_on_h2c(sidecar_factory, signing_key, new_id):
    engine = StandInRESTOverH2([(signing_key.kid, signing_key.public_key)]).start()
    try:
        sidecar = sidecar_factory(upstream=f"http://{engine.address}")
        status, fields, _ = h2c_call(sidecar, "PUT", vehicle(new_id("v-")), [b"{}"])
        assert status == 200 and fields["x-standin"] == "rest-h2"
        [seen] = engine.requests
        assert seen.stream != 0, "an HTTP/2 stream, as before"
    finally:
        engine.stop()
