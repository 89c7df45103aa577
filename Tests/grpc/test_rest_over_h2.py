"""REST calls from HTTP/1.1 clients over the HTTP/2 upstream (`--upstream-protocol h2`,
docs/CONTRACT.md §6), against an h2c stand-in Fleet Engine that checks every token
(standin_rest_h2.py): each request becomes exactly one HTTP/2 stream with one
`authorization`, and each answer comes back as one HTTP/1.1 answer framed by the sidecar."""
from __future__ import annotations

import re
import socket
import ssl
import subprocess
import urllib.request

import pytest

from conftest import PROVIDER_ID
from standin_rest_h2 import StandInRESTOverH2


@pytest.fixture(scope="module")
def rest_h2(signing_key):
    engine = StandInRESTOverH2([(signing_key.kid, signing_key.public_key)]).start()
    yield engine
    engine.stop()


@pytest.fixture(scope="module")
def h2_sidecar(sidecar_factory, rest_h2):
    return sidecar_factory(upstream=f"http://{rest_h2.address}", extra_args=("--upstream-protocol", "h2"))


@pytest.fixture(autouse=True)
def _fresh(rest_h2):
    rest_h2.reset()


def vehicle(entity_id: str, verb: str = "") -> str:
    return f"/v1/providers/{PROVIDER_ID}/vehicles/{entity_id}{verb}"


def curl(sidecar, method: str, path: str, *args: str, http10: bool = False) -> tuple[int, dict[str, str], bytes]:
    """One call by curl over HTTP/1.1 (or 1.0): status, header fields (lower-case), body."""
    out = subprocess.run(
        ["curl", "-sS", "-i", "--http1.0" if http10 else "--http1.1", "-X", method, f"http://{sidecar.address}{path}", *args],
        capture_output=True, timeout=20, check=True).stdout
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        fields[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), fields, body


@pytest.mark.parametrize("method,verb,body", [
    ("GET", "", None), ("DELETE", "", None), ("PUT", "", b'{"vehicleState":"ONLINE"}'),
    ("POST", ":updateLocation", b'{"lastLocation":{}}'), ("PUT", "", b""),
])
def test_rest_call_is_one_stream_with_one_token(h2_sidecar, rest_h2, new_id, method, verb, body):
    entity_id = new_id("v-")
    args = ("--data-binary", body.decode(), "-H", "Content-Type: application/json") if body is not None else ()
    status, fields, answer = curl(h2_sidecar, method, vehicle(entity_id, verb), *args,
                                  "-H", "X-Custom: kept", "-H", "Connection: close, X-Hop", "-H", "X-Hop: dropped",
                                  "-H", "Authorization: Bearer client-token")
    assert status == 200, answer
    assert fields["content-length"] == str(len(answer))
    assert fields["x-standin"] == "rest-h2"
    assert b'"method": "%s"' % method.encode() in answer
    [seen] = rest_h2.requests
    assert seen.header(":method") == [method]
    assert seen.header(":path") == [vehicle(entity_id, verb)]
    assert seen.header(":authority") == [rest_h2.address]
    assert seen.header(":scheme") == ["http"]
    assert len(seen.header("authorization")) == 1 and seen.header("authorization")[0] != "Bearer client-token"
    assert seen.header("x-custom") == ["kept"]
    assert seen.header("x-hop") == [] and seen.header("connection") == [] and seen.header("host") == []
    assert seen.body == (body or b"")


def test_patch_with_body(h2_sidecar, rest_h2, new_id):
    path = f"/v1/providers/{PROVIDER_ID}/deliveryVehicles/{new_id('dv-')}?updateMask=a"
    status, _, answer = curl(h2_sidecar, "PATCH", path, "--data-binary", '{"a":1}')
    assert status == 200, answer
    assert rest_h2.requests[0].body == b'{"a":1}'


def test_chunked_request_body(h2_sidecar, rest_h2, new_id):
    status, _, _ = curl(h2_sidecar, "PUT", vehicle(new_id("v-")), "-H", "Transfer-Encoding: chunked", "--data-binary", "x" * 5000)
    assert status == 200
    [seen] = rest_h2.requests
    assert seen.body == b"x" * 5000
    assert seen.header("content-length") == ["5000"] and seen.header("transfer-encoding") == []


def test_large_streamed_body(h2_sidecar, rest_h2, new_id):
    body = b"y" * 300_000
    out = subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "--data-binary", "@-",
                          f"http://{h2_sidecar.address}{vehicle(new_id('v-'))}"], input=body, capture_output=True, timeout=20)
    assert out.stdout == b"200"
    assert rest_h2.requests[0].body == body


def test_401_is_retried_once_with_a_fresh_token(h2_sidecar, rest_h2, new_id):
    status, _, answer = curl(h2_sidecar, "PUT", vehicle(new_id("once401-")), "--data-binary", "{}")
    assert status == 200, answer
    assert [r.status for r in rest_h2.requests] == [401, 200]
    assert all(r.body == b"{}" for r in rest_h2.requests)


def test_refused_stream_is_sent_again(h2_sidecar, rest_h2, new_id):
    status, _, answer = curl(h2_sidecar, "POST", vehicle(new_id("refuse-"), ":updateLocation"), "--data-binary", "{}")
    assert status == 200, answer
    assert [r.status for r in rest_h2.requests] == [0, 200]


def test_reset_before_the_head_is_502(h2_sidecar, rest_h2, new_id):
    status, _, answer = curl(h2_sidecar, "GET", vehicle(new_id("resetbefore-")))
    assert status == 502
    assert b"UNAVAILABLE" in answer


def test_reset_after_the_head_closes_the_client_connection(h2_sidecar, rest_h2, new_id):
    host, port = h2_sidecar.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"GET {vehicle(new_id('resetafter-'))} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        got = b""
        while chunk := s.recv(65536):
            got += chunk
    assert got.startswith(b"HTTP/1.1 200 ")
    assert b"transfer-encoding: chunked" in got.lower()
    assert not got.endswith(b"0\r\n\r\n"), "a cut answer must not look complete"


def test_answer_without_length_is_chunked_for_http11_and_close_delimited_for_http10(h2_sidecar, new_id):
    status, fields, body = curl(h2_sidecar, "GET", vehicle(new_id("nolen-")))
    assert status == 200 and fields["transfer-encoding"] == "chunked" and b'"name"' in body
    status, fields, body = curl(h2_sidecar, "GET", vehicle(new_id("nolen-")), http10=True)
    assert status == 200 and "transfer-encoding" not in fields and "content-length" not in fields
    assert body.startswith(b"{") and body.endswith(b"}")


def test_field_invalid_for_http11_is_never_relayed(h2_sidecar, new_id):
    status, fields, body = curl(h2_sidecar, "GET", vehicle(new_id("badfield-")))
    # nghttp2 refuses a field value with a control byte (RFC 9113 §8.2.1): the stream is reset
    # before the head reaches the sidecar, so the answer is a 502, and no 0x01 reaches the
    # client. (`H2MessageTranslation.isRelayed` drops such a field should one ever get through:
    # unit-tested in H2MessageTranslationTests.)
    assert status == 502, body
    assert "x-bad" not in fields and b"\x01" not in body


def test_keep_alive_and_pipelining_never_share_a_stream(h2_sidecar, rest_h2, new_id):
    host, port = h2_sidecar.address.rsplit(":", 1)
    ids = [new_id("v-") for _ in range(3)]
    # The second request's head and body sit right behind the first one's body: it must
    # become a stream of its own, never DATA of the first.
    pipelined = b"".join(
        f"PUT {vehicle(i)} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{{}}".encode() for i in ids)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(pipelined)
        got = b""
        while got.count(b"HTTP/1.1 200 ") < 3:
            chunk = s.recv(65536)
            assert chunk, got
            got += chunk
    assert [r.body for r in rest_h2.requests] == [b"{}"] * 3
    assert sorted(r.header(":path")[0] for r in rest_h2.requests) == sorted(vehicle(i) for i in ids)
    assert len({r.stream for r in rest_h2.requests}) == 3
    # Keep-alive to the client, one multiplexed connection to the upstream.
    assert len({r.connection for r in rest_h2.requests}) == 1


def test_over_tls_many_calls_share_one_multiplexed_connection(sidecar_factory, signing_key, pki, tmp_path, new_id):
    (tmp_path / "cert.pem").write_bytes(pki.certificate_pem)
    (tmp_path / "key.pem").write_bytes(pki.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    context.set_alpn_protocols(["h2"])
    engine = StandInRESTOverH2([(signing_key.kid, signing_key.public_key)], tls_context=context).start()
    try:
        sidecar = sidecar_factory(upstream=f"https://{engine.address}",
                                  extra_args=("--upstream-protocol", "h2", "--upstream-ca-file", str(pki.ca_file)))
        calls = [subprocess.Popen(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--http1.1",
                                   f"http://{sidecar.address}{vehicle(new_id('v-'))}"], stdout=subprocess.PIPE)
                 for _ in range(12)]
        assert [c.communicate(timeout=20)[0] for c in calls] == [b"200"] * 12
        assert engine.connections == 1
        assert {r.header(":scheme")[0] for r in engine.requests} == {"https"}
        assert len(engine.requests) == 12
    finally:
        engine.stop()


def test_a_client_that_leaves_mid_body_resets_its_stream_and_the_next_call_works(h2_sidecar, rest_h2, new_id):
    host, port = h2_sidecar.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(f"PUT {vehicle(new_id('v-'))} HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n".encode() + b"z" * 70_000)
    status, _, answer = curl(h2_sidecar, "GET", vehicle(new_id("v-")))
    assert status == 200, answer
    # The cut request never reached the stand-in as a whole request.
    assert all(len(r.body) != 100_000 for r in rest_h2.requests)
    assert [r.header(":method")[0] for r in rest_h2.requests] == ["GET"]


# -- `--upstream-protocol auto` on https: HTTP/2 when ALPN agrees, else HTTP/1.1 ----------------


def tls_engine(signing_key, pki, tmp_path, alpn: list[str] | None) -> StandInRESTOverH2:
    """A TLS stand-in whose server context offers `alpn` (None: no ALPN at all)."""
    (tmp_path / "cert.pem").write_bytes(pki.certificate_pem)
    (tmp_path / "key.pem").write_bytes(pki.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    if alpn is not None:
        context.set_alpn_protocols(alpn)
    return StandInRESTOverH2([(signing_key.kid, signing_key.public_key)], tls_context=context).start()


def tls_sidecar(sidecar_factory, engine, pki, *extra: str):
    """A sidecar calling `engine` over TLS with the test CA, its admin listener on."""
    return sidecar_factory(upstream=f"https://{engine.address}",
                           extra_args=("--upstream-ca-file", str(pki.ca_file), "--admin-listen", "127.0.0.1:0", *extra))


def upstream_connections_opened(sidecar) -> dict[str, float]:
    """`fleet_token_proxy_upstream_connections_opened_total` by protocol label."""
    admin = re.search(r'admin="?(127\.0\.0\.1:\d+)', sidecar.log_path.read_text(errors="replace")).group(1)
    with urllib.request.urlopen(f"http://{admin}/metrics", timeout=5) as response:
        text = response.read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^fleet_token_proxy_upstream_connections_opened_total\{protocol="([^"]+)"\} (\S+)$', text, re.M)}


def concurrent_curls(sidecar, paths: list[str]) -> list[bytes]:
    calls = [subprocess.Popen(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--http1.1", "-X", "PUT",
                               "--data-binary", "{}", f"http://{sidecar.address}{path}"], stdout=subprocess.PIPE)
             for path in paths]
    return [c.communicate(timeout=20)[0] for c in calls]


def test_auto_over_tls_carries_rest_on_one_h2_connection_when_alpn_agrees(sidecar_factory, signing_key, pki, tmp_path, new_id):
    engine = tls_engine(signing_key, pki, tmp_path, ["h2", "http/1.1"])
    try:
        sidecar = tls_sidecar(sidecar_factory, engine, pki)
        assert concurrent_curls(sidecar, [vehicle(new_id("v-")) for _ in range(12)]) == [b"200"] * 12
        assert engine.protocols == ["h2"], "warm-up dialed the HTTP/2 pool only, and its one connection carried every call"
        assert {r.header(":scheme")[0] for r in engine.requests} == {"https"}
        assert len(engine.requests) == 12 and all(r.body == b"{}" for r in engine.requests)
        assert upstream_connections_opened(sidecar) == {"h2": 1, "http1.1": 0}
    finally:
        engine.stop()


@pytest.mark.parametrize("alpn", [["http/1.1"], None], ids=["http1.1-only", "no-alpn"])
def test_auto_over_tls_falls_back_to_http1_with_nothing_lost(sidecar_factory, signing_key, pki, tmp_path, new_id, alpn):
    engine = tls_engine(signing_key, pki, tmp_path, alpn)
    try:
        sidecar = tls_sidecar(sidecar_factory, engine, pki)
        # The first burst races the warm-up connection's ALPN answer: calls waiting on it go
        # again by HTTP/1.1; the second finds the route settled.
        paths = [vehicle(new_id("v-")) for _ in range(8)]
        assert concurrent_curls(sidecar, paths) == [b"200"] * 8
        assert concurrent_curls(sidecar, [vehicle(new_id("v-")) for _ in range(4)]) == [b"200"] * 4
        assert len(engine.requests) == 12, "each call reached the upstream once"
        assert {r.status for r in engine.requests} == {200}
        assert sorted(r.header(":path")[0] for r in engine.requests[:8]) == sorted(paths)
        opened = upstream_connections_opened(sidecar)
        assert opened["h2"] == 1, "one HTTP/2 dial taught the sidecar the origin is HTTP/1.1-only"
        assert opened["http1.1"] >= 1
        assert engine.protocols[0] == (alpn[0] if alpn else None)
        assert "REST calls go over HTTP/1.1 from now on" in sidecar.log_path.read_text(errors="replace")
    finally:
        engine.stop()


def test_pinned_http11_rest_connections_offer_only_http11(sidecar_factory, signing_key, pki, tmp_path, new_id):
    engine = tls_engine(signing_key, pki, tmp_path, ["h2", "http/1.1"])
    try:
        sidecar = tls_sidecar(sidecar_factory, engine, pki, "--upstream-protocol", "http1.1")
        assert concurrent_curls(sidecar, [vehicle(new_id("v-")) for _ in range(4)]) == [b"200"] * 4
        assert len(engine.requests) == 4 and all(r.stream == 0 for r in engine.requests), "all over HTTP/1.1"
        # The warm HTTP/2 connection (for gRPC) agreed on h2; every REST connection on http/1.1.
        assert engine.protocols.count("h2") == 1
        assert engine.protocols.count("http/1.1") >= 1 and set(engine.protocols) == {"h2", "http/1.1"}
    finally:
        engine.stop()
