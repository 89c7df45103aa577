"""Segmentation invariance (docs/CONTRACT.md §4, revoked tokens; §7, a call sent twice): an
HTTP/1.1 client's REST call has the same outcome however its bytes are cut into segments, on
every upstream the sidecar pairs it with: the HTTP/2 upstream over h2c (`--upstream-protocol
h2`), over TLS as `auto` picks it for an `https` upstream (the default flow to Fleet Engine),
and the HTTP/1.1 pool over TLS. Each request is sent whole, then cut inside its head and its
body, each piece its own segment (TCP_NODELAY, 30 ms apart); the stand-in must receive the same
request and the client the same answer, the 401 healed and a refused stream sent again."""
from __future__ import annotations

import socket
import ssl
import time

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
