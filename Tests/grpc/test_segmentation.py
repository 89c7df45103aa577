"""Segmentation invariance (docs/CONTRACT.md §4, revoked tokens; §7, a call sent twice): an
HTTP/1.1 client's REST call has the same outcome however its bytes are cut into segments, on
every upstream the sidecar pairs it with: the HTTP/2 upstream over h2c (`--upstream-protocol
h2`), over TLS as `auto` picks it for an `https` upstream (the default flow to Fleet Engine),
and the HTTP/1.1 pool over TLS. Each request is sent whole, then cut inside its head and its
body, each piece its own segment (TCP_NODELAY, 30 ms apart); the stand-in must receive the same
request and the client the same answer, the 401 healed and a refused stream sent again. An h2c
client's body is cut into DATA frames the same way, on both upstream protocols."""
from __future__ import annotations

import socket
import ssl
import time

import h2.config
import h2.connection
import h2.events
import pytest

from conftest import PROVIDER_ID
from standin_rest_h2 import StandInRESTOverH2


def _cuts(head: int, body: int) -> dict[str, list[int]]:
    return {
        "whole": [],
        "head, then body": [head],
        "head in two, body in two": [head // 2, head, head + max(1, body // 2)],
        "head with part of the body": [head + max(1, body // 2)],
        "body a byte at a time": list(range(head, head + body)),
    }


def _request(method: str, path: str, body: bytes, chunked: bool) -> tuple[bytes, int]:
    """The request's bytes and its head's length."""
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    if chunked:
        half = len(body) // 2
        head += "Transfer-Encoding: chunked\r\n\r\n"
        wire = b"%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n" % (half, body[:half], len(body) - half, body[half:])
    else:
        head += f"Content-Length: {len(body)}\r\n\r\n"
        wire = body
    return head.encode() + wire, len(head)


def _send_cut(address: str, wire: bytes, offsets: list[int]) -> bytes:
    """Sends `wire` cut at `offsets` and returns the status line of the answer."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = 0
        for offset in [*offsets, len(wire)]:
            if offset <= start:
                continue
            if start:
                time.sleep(0.03)
            s.sendall(wire[start:offset])
            start = offset
        got = b""
        while b"\r\n" not in got:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    return got.split(b"\r\n", 1)[0]


def _tls_engine(signing_key, pki, tmp_path, alpn: list[str]) -> StandInRESTOverH2:
    (tmp_path / "cert.pem").write_bytes(pki.certificate_pem)
    (tmp_path / "key.pem").write_bytes(pki.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    context.set_alpn_protocols(alpn)
    return StandInRESTOverH2([(signing_key.kid, signing_key.public_key)], tls_context=context).start()


@pytest.fixture(scope="module", params=["h2c", "tls-h2-auto", "tls-http1.1"])
def pairing(request, sidecar_factory, signing_key, pki, tmp_path_factory):
    """(sidecar, engine) for one upstream pairing of an HTTP/1.1 client."""
    if request.param == "h2c":
        engine = StandInRESTOverH2([(signing_key.kid, signing_key.public_key)]).start()
        sidecar = sidecar_factory(upstream=f"http://{engine.address}", extra_args=("--upstream-protocol", "h2"))
    else:
        tmp = tmp_path_factory.mktemp("seg-tls")
        engine = _tls_engine(signing_key, pki, tmp, ["h2", "http/1.1"])
        protocol = "auto" if request.param == "tls-h2-auto" else "http1.1"
        sidecar = sidecar_factory(upstream=f"https://{engine.address}",
                                  extra_args=("--upstream-ca-file", str(pki.ca_file), "--upstream-protocol", protocol))
    yield request.param, sidecar, engine
    engine.stop()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("method,verb", [("PUT", ""), ("POST", ":updateLocation")])
def test_a_revoked_token_is_healed_whatever_the_segmentation(pairing, new_id, method, verb, chunked):
    name, sidecar, engine = pairing
    body = b'{"lastLocation":{"location":{"latitude":1.5}}}'
    for cut in _cuts(0, 0):
        engine.reset()
        path = f"/v1/providers/{PROVIDER_ID}/vehicles/{new_id('once401-')}{verb}"
        wire, head = _request(method, path, body, chunked)
        offsets = _cuts(head, len(wire) - head)[cut]
        status = _send_cut(sidecar.address, wire, offsets)
        assert status.startswith(b"HTTP/1.1 200 "), f"{name}, {cut}: {status!r}"
        assert [r.status for r in engine.requests] == [401, 200], f"{name}, {cut}"
        assert [r.body for r in engine.requests] == [body, body], f"{name}, {cut}"


def test_a_refused_stream_is_sent_again_whatever_the_segmentation(pairing, new_id):
    name, sidecar, engine = pairing
    if name == "tls-http1.1":
        pytest.skip("REFUSED_STREAM is an HTTP/2 answer")
    body = b'{"lastLocation":{}}'
    for cut in _cuts(0, 0):
        engine.reset()
        path = f"/v1/providers/{PROVIDER_ID}/vehicles/{new_id('refuse-')}:updateLocation"
        wire, head = _request("POST", path, body, False)
        status = _send_cut(sidecar.address, wire, _cuts(head, len(body))[cut])
        assert status.startswith(b"HTTP/1.1 200 "), f"{name}, {cut}: {status!r}"
        assert [r.status for r in engine.requests] == [0, 200], f"{name}, {cut}"
        assert engine.requests[-1].body == body


# -- An h2c client's body cut into DATA frames -----------------------------------------------------

def _h2c_cut(address: str, method: str, path: str, parts: list[bytes], declared: bool) -> int:
    """One REST call over h2c, its body as one DATA frame per part, 30 ms apart; the status."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as s:
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        conn.initiate_connection()
        fields = [(":method", method), (":path", path), (":scheme", "http"), (":authority", address),
                  ("content-type", "application/json")]
        if declared:
            fields.append(("content-length", str(sum(len(p) for p in parts))))
        conn.send_headers(1, fields)
        s.sendall(conn.data_to_send())
        for i, part in enumerate(parts):
            time.sleep(0.03)
            conn.send_data(1, part, end_stream=i == len(parts) - 1)
            s.sendall(conn.data_to_send())
        status = 0
        while True:
            data = s.recv(65536)
            assert data, "the sidecar closed before the answer ended"
            for event in conn.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived):
                    status = int(dict(event.headers)[":status"])
                elif isinstance(event, h2.events.DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, 1)
                elif isinstance(event, h2.events.StreamReset):
                    raise AssertionError(f"stream reset: {event.error_code}")
                elif isinstance(event, h2.events.StreamEnded):
                    return status
            s.sendall(conn.data_to_send())


@pytest.fixture(scope="module", params=["h2c-upstream", "tls-http1.1-upstream"])
def h2c_pairing(request, sidecar_factory, signing_key, pki, tmp_path_factory):
    """(name, sidecar, engine) for an h2c client's REST on each upstream protocol."""
    if request.param == "h2c-upstream":
        engine = StandInRESTOverH2([(signing_key.kid, signing_key.public_key)]).start()
        sidecar = sidecar_factory(upstream=f"http://{engine.address}", extra_args=("--upstream-protocol", "h2"))
    else:
        engine = _tls_engine(signing_key, pki, tmp_path_factory.mktemp("seg-h2c"), ["h2", "http/1.1"])
        sidecar = sidecar_factory(upstream=f"https://{engine.address}",
                                  extra_args=("--upstream-ca-file", str(pki.ca_file), "--upstream-protocol", "http1.1"))
    yield request.param, sidecar, engine
    engine.stop()


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "no-length"])
def test_an_h2c_clients_revoked_token_is_healed_whatever_its_data_frames(h2c_pairing, new_id, declared):
    name, sidecar, engine = h2c_pairing
    body = b'{"lastLocation":{"location":{"latitude":1.5}}}'
    for cut, parts in {"one frame": [body], "two frames": [body[:9], body[9:]],
                       "a byte a frame": [body[i:i + 1] for i in range(len(body))]}.items():
        engine.reset()
        path = f"/v1/providers/{PROVIDER_ID}/vehicles/{new_id('once401-')}:updateLocation"
        status = _h2c_cut(sidecar.address, "POST", path, parts, declared)
        assert status == 200, f"{name}, {cut}"
        assert [r.status for r in engine.requests] == [401, 200], f"{name}, {cut}"
        assert [r.body for r in engine.requests] == [body, body], f"{name}, {cut}"
