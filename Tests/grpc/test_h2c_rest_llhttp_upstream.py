"""An h2c client's REST calls on the HTTP/1.1 upstream (`--upstream-protocol http1.1`, issue 17),
read upstream by llhttp (PyPI `httptools`, strict): a few hundred generated requests whose extra
header fields come from a hostile alphabet (framing fields, hop-by-hop fields, CR, LF, NUL,
outer whitespace, upper case, bytes over 0x7F) and whose bodies may disagree with their
`content-length`.

Whatever the sidecar answers, an HTTP/2 request never becomes more or other than one HTTP/1.1
request: a stream answered 200 reached the upstream as exactly one request that llhttp reads
with the method, target and body the client sent, one `Authorization: Bearer`, one `Host`, no
field the client did not send (but the sidecar's framing and its joined cookies); a stream
answered otherwise, or reset, reached it as nothing it could read as a request. That includes a
body that outgrows its declared `content-length` after the declared length went: the request's
last byte waits for the client's END_STREAM, so the upstream has only a request cut short when
its connection is closed.
"""
from __future__ import annotations

import random
import time

import pytest

import h2_raw
from test_http1_llhttp_differential import ROUTES, RecordingUpstream

SEED = 17
CALLS = 300

NAMES = [b"content-length", b"transfer-encoding", b"host", b"connection", b"cookie", b"te", b"upgrade",
         b"keep-alive", b"proxy-connection", b"x-a", b"x-b", b"X-Up", b"x a", b"expect"]
VALUES = [b"0", b"1", b"3", b"12", b"3, 3", b"-1", b"chunked", b"gzip, chunked", b"close", b"trailers", b"a=1",
          b"", b" a", b"a ", b"a\tb", b"a\r\nb", b"a\nb", b"a\rb", b"\x00", b"\x7f", b"\xc3\xa9", b"\xff",
          b"100-continue", b"h2c", b"x\r\n\r\nGET /v1/x HTTP/1.1\r\nHost: y"]
FRAMING = {b"content-length", b"transfer-encoding"}


def _literal(name: bytes, value: bytes) -> bytes:
    """A literal header field without indexing, new name, no Huffman: bytes as given."""
    return b"\x00" + h2_raw.hpack_integer(len(name), 7) + name + h2_raw.hpack_integer(len(value), 7) + value


def _requests(rng: random.Random):
    for _ in range(CALLS):
        method, target, body = rng.choice(ROUTES)
        fields = [(rng.choice(NAMES), rng.choice(VALUES)) for _ in range(rng.randint(0, 4))]
        if rng.random() < 0.3:
            fields.append((b"content-length", str(len(body) + rng.choice([0, 0, 1, -1])).encode()))
        yield method, target, body, fields


def _call(address: str, method: str, target: str, body: bytes, fields) -> str | None:
    """One stream on a new connection; the answer's `:status`, or None if it was reset or the
    connection went away first."""
    connection = h2_raw.H2Connection(address)
    try:
        pseudo = [(b":method", method.encode()), (b":scheme", b"http"), (b":path", target.encode()),
                  (b":authority", address.encode())]
        block = b"".join(_literal(n, v) for n, v in pseudo + fields)
        connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS | (0 if body else h2_raw.END_STREAM), 1, block))
        if body:
            connection.send(h2_raw.frame(h2_raw.DATA, h2_raw.END_STREAM, 1, body))
        head = connection.wait_for(lambda f: f.stream_id == 1 and f.type == h2_raw.HEADERS
                                   or (f.stream_id == 1 and f.type == h2_raw.RST_STREAM) or f.type == h2_raw.GOAWAY, 10)
        return head.header(":status") if head is not None and head.type == h2_raw.HEADERS else None
    except (OSError, h2_raw.ConnectionClosed):
        return None
    finally:
        connection.close()


def test_an_h2c_request_becomes_exactly_one_request_llhttp_reads_as_sent_or_nothing(sidecar_factory):
    upstream = RecordingUpstream()
    sidecar = sidecar_factory(upstream=f"http://127.0.0.1:{upstream.port}", extra_args=("--upstream-protocol", "http1.1"))
    try:
        forwarded, refused, failures = 0, 0, []
        for method, target, body, fields in _requests(random.Random(SEED)):
            before = len(upstream.requests)
            status = _call(sidecar.address, method, target, body, fields)
            time.sleep(0.01 if status == "200" else 0.05)  # a stray second request would be read by now
            with upstream.lock:
                received = upstream.requests[before:]
            described = f"{method} {target} {fields!r} body {body!r}"
            if status != "200":
                refused += 1
                if [r for r in received if r.method]:
                    failures.append(f"answered {status} but the upstream read {len(received)} requests: {described}: " + "; ".join(f"{r.method} {r.url!r} {r.body!r} {r.error}" for r in received))
                continue
            forwarded += 1
            if len(received) != 1:
                failures.append(f"the upstream read {len(received)} requests: {described}")
                continue
            got = received[0]
            sent = {(n.lower(), v) for n, v in fields}
            cookies = b"; ".join(v for n, v in fields if n == b"cookie" and v)
            extra = [
                (n, v) for n, v in got.headers
                if n.lower() not in {b"host", b"authorization"} | FRAMING
                and (n.lower(), v) not in sent and not (n.lower() == b"cookie" and v == cookies)
            ]
            problems = [
                what for what, bad in [
                    ("error", got.error), ("method", got.method != method), ("target", got.url != target.encode()),
                    ("body", got.body != body),
                    ("Authorization", [v[:7] for n, v in got.headers if n.lower() == b"authorization"] != [b"Bearer "]),
                    ("Host", len([n for n, _ in got.headers if n.lower() == b"host"]) != 1),
                    (f"fields not sent {extra}", extra),
                ] if bad
            ]
            if problems:
                failures.append(f"{problems}: {described} read upstream as {got.method} {got.url!r} {got.headers}")
        assert not failures, f"{len(failures)} failures, e.g.\n" + "\n".join(failures[:10])
        # Both outcomes are exercised, or the test could not fail.
        assert forwarded >= 60 and refused >= 60, (forwarded, refused)
    finally:
        upstream.stop()


def _post_held_open(address: str, declared: int, first: bytes) -> h2_raw.H2Connection:
    """An h2c POST declaring `declared` body bytes, `first` sent in a DATA frame that does not
    end the stream; the stream stays open."""
    connection = h2_raw.H2Connection(address)
    target = "/v1/providers/standin-project/vehicles/v-1:updateLocation"
    pseudo = [(b":method", b"POST"), (b":scheme", b"http"), (b":path", target.encode()),
              (b":authority", address.encode()), (b"content-length", str(declared).encode())]
    connection.send(h2_raw.frame(h2_raw.HEADERS, h2_raw.END_HEADERS, 1, b"".join(_literal(n, v) for n, v in pseudo)))
    if first:
        connection.send(h2_raw.frame(h2_raw.DATA, 0, 1, first))
    return connection


def _answer_or_reset(connection: h2_raw.H2Connection) -> str | None:
    head = connection.wait_for(lambda f: f.stream_id == 1 and f.type in (h2_raw.HEADERS, h2_raw.RST_STREAM)
                               or f.type == h2_raw.GOAWAY, 10)
    return head.header(":status") if head is not None and head.type == h2_raw.HEADERS else None


@pytest.mark.parametrize("declared,first", [(2, b"{}"), (0, b"")], ids=["body", "empty-body"])
def test_a_declared_length_request_waits_upstream_for_the_clients_end_of_stream(sidecar_factory, declared, first):
    """Every declared byte has come but the client has not ended its stream: the upstream has
    no request it can read as complete (its last byte is held) until the END_STREAM comes."""
    upstream = RecordingUpstream()
    sidecar = sidecar_factory(upstream=f"http://127.0.0.1:{upstream.port}", extra_args=("--upstream-protocol", "http1.1"))
    connection = _post_held_open(sidecar.address, declared, first)
    try:
        time.sleep(0.5)  # the token fetched, the head and the body sent but the held byte
        assert [r for r in upstream.requests if r.method] == []
        connection.send(h2_raw.frame(h2_raw.DATA, h2_raw.END_STREAM, 1))
        assert _answer_or_reset(connection) == "200"
        assert [(r.method, r.body) for r in upstream.requests] == [("POST", first)]
    finally:
        connection.close()
        upstream.stop()


@pytest.mark.parametrize("declared,first", [(2, b"{}"), (0, b"")], ids=["body", "empty-body"])
def test_a_body_longer_than_declared_after_the_declared_bytes_reaches_nothing_upstream(sidecar_factory, declared, first):
    upstream = RecordingUpstream()
    sidecar = sidecar_factory(upstream=f"http://127.0.0.1:{upstream.port}", extra_args=("--upstream-protocol", "http1.1"))
    connection = _post_held_open(sidecar.address, declared, first)
    try:
        time.sleep(0.5)
        connection.send(h2_raw.frame(h2_raw.DATA, h2_raw.END_STREAM, 1, b"x"))
        assert _answer_or_reset(connection) != "200"
        time.sleep(0.2)  # the upstream connection's close is read by now
        assert [r for r in upstream.requests if r.method] == []
    finally:
        connection.close()
        upstream.stop()
