"""The sidecar's HTTP/1.1 request parser against llhttp, Node's parser (PyPI `httptools`, strict:
no leniency flag set), on a few thousand generated and mutated request heads and bodies.

- Where llhttp refuses a message the sidecar accepts, the test fails unless `why_sidecar_is_right`
  names the reason (each reason is a comment there).
- Where both accept, method, target, version, framing and body length agree.
- End to end: every message both accept whose target is a Fleet Engine REST route goes through the
  running sidecar to a recording upstream; what the upstream receives, read by llhttp, is exactly
  one request per call the sidecar forwards, with llhttp's reading of the client's method, target
  and body, framed by the sidecar (Content-Length, never Transfer-Encoding), with one Authorization.

The sidecar's parser is reached through `http1-parse-probe` (Tests/HTTP1ParseProbe), built with
the sidecar by `swift build`.
"""
from __future__ import annotations

import json
import random
import socket
import struct
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path

import httptools
import pytest

from conftest import PROVIDER_ID
from sidecar_process import find_binary

SEED = 9  # issue 9: the corpus is the same on every run, so a failure replays.

# (method, target, body) of docs/CONTRACT.md §3 REST calls.
ROUTES = [
    ("GET", f"/v1/providers/{PROVIDER_ID}/vehicles/v-1", b""),
    ("PUT", f"/v1/providers/{PROVIDER_ID}/vehicles/v-1?updateMask=state", b'{"vehicleState":"ONLINE"}'),
    ("POST", f"/v1/providers/{PROVIDER_ID}/vehicles/v-1:updateLocation", b'{"lastLocation":{}}'),
    ("POST", f"/v1/providers/{PROVIDER_ID}/vehicles?vehicleId=v-2", b'{"name":"x"}'),
    ("DELETE", f"/v1/providers/{PROVIDER_ID}/trips/t-1", b""),
    ("POST", f"/v1/providers/{PROVIDER_ID}/trips?tripId=t-2", b"{}"),
    ("PATCH", f"/v1/providers/{PROVIDER_ID}/deliveryVehicles/dv-1?updateMask=a", b'{"a":1}'),
    ("GET", f"/v1/providers/{PROVIDER_ID}/tasks/task%2D1", b""),
    ("POST", f"/v1/providers/{PROVIDER_ID}/tasks:batchCreate", b'{"requests":[]}'),
    ("GET", f"/v1/providers/{PROVIDER_ID}/taskTrackingInfo/track-1", b""),
    ("GET", f"/v1/providers/{PROVIDER_ID}/vehicles?pageSize=10&filter=a%3Db", b""),
    ("POST", f"/v1/providers/{PROVIDER_ID}/vehicles:search", b'{"pickupPoint":{}}' * 40),
]
# The methods llhttp knows (llhttp's method table, HTTP subset).
LLHTTP_METHODS = {
    "DELETE", "GET", "HEAD", "POST", "PUT", "CONNECT", "OPTIONS", "TRACE", "COPY", "LOCK", "MKCOL", "MOVE",
    "PROPFIND", "PROPPATCH", "SEARCH", "UNLOCK", "BIND", "REBIND", "UNBIND", "ACL", "REPORT", "MKACTIVITY",
    "CHECKOUT", "MERGE", "M-SEARCH", "NOTIFY", "SUBSCRIBE", "UNSUBSCRIBE", "PATCH", "PURGE", "MKCALENDAR",
    "LINK", "UNLINK", "SOURCE", "QUERY",
}


def chunked(body: bytes, sizes: list[int], size_format="{:x}", ext=b"", trailers=b"") -> bytes:
    out, i = b"", 0
    for size in sizes:
        piece = body[i:i + size]
        if not piece:
            break
        out += size_format.format(len(piece)).encode() + ext + b"\r\n" + piece + b"\r\n"
        i += len(piece)
    if i < len(body):
        out += f"{len(body) - i:x}".encode() + b"\r\n" + body[i:] + b"\r\n"
    return out + b"0\r\n" + trailers + b"\r\n"


def well_formed(rng: random.Random) -> tuple[bytes, bytes]:
    """A valid request (head, body bytes as sent) with a random framing."""
    method, target, body = rng.choice(ROUTES)
    version = rng.choice(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0"])
    headers = [("Host", "127.0.0.1"), ("User-Agent", "differential/1"), ("Accept", "*/*")]
    if rng.random() < 0.3:
        headers.append(("Content-Type", "application/json"))
    framing = rng.choice(["length", "chunked", "none"]) if body else rng.choice(["none", "none", "length"])
    if version == "HTTP/1.0" and framing == "chunked":
        framing = "length"
    if framing == "none" and body:
        framing = "length"
    wire = b""
    if framing == "length":
        headers.append(("Content-Length", str(len(body))))
        wire = body
    elif framing == "chunked":
        headers.append(("Transfer-Encoding", "chunked"))
        sizes = [rng.randint(1, 8) for _ in range(rng.randint(1, 4))]
        wire = chunked(body, sizes, size_format=rng.choice(["{:x}", "{:X}", "{:04x}"]),
                       ext=rng.choice([b"", b"", b";a=b", b';name="quoted"']),
                       trailers=rng.choice([b"", b"", b"X-Trailer: t\r\n"]))
    rng.shuffle(headers)
    head = f"{method} {target} {version}\r\n".encode() + b"".join(f"{n}: {v}\r\n".encode() for n, v in headers) + b"\r\n"
    return head, wire


def replace_once(rng: random.Random, data: bytes, old: bytes, new: bytes) -> bytes:
    spots = [i for i in range(len(data)) if data.startswith(old, i)]
    if not spots:
        return data
    i = rng.choice(spots)
    return data[:i] + new + data[i + len(old):]


def add_header(head: bytes, line: bytes) -> bytes:
    return head[:-2] + line + b"\r\n\r\n"


HEAD_MUTATIONS = [
    # Odd whitespace.
    lambda r, h: replace_once(r, h, b" ", b"  "), lambda r, h: replace_once(r, h, b" ", b"\t"),
    lambda r, h: replace_once(r, h, b": ", b" : "), lambda r, h: replace_once(r, h, b": ", b":"),
    lambda r, h: replace_once(r, h, b": ", b":\t "), lambda r, h: replace_once(r, h, b"\r\n", b" \r\n"),
    lambda r, h: replace_once(r, h, b"\r\n", b"\t\r\n"), lambda r, h: b"\r\n" + h, lambda r, h: b" " + h,
    # obs-fold, bare CR, bare LF.
    lambda r, h: replace_once(r, h, b"\r\nUser-Agent: ", b"\r\n  User-Agent: "),
    lambda r, h: add_header(h, b"X-Folded: a\r\n b"), lambda r, h: add_header(h, b"X-Folded: a\r\n\tb"),
    lambda r, h: replace_once(r, h, b"\r\n", b"\n"), lambda r, h: replace_once(r, h, b"\r\n", b"\r"),
    lambda r, h: h.replace(b"\r\n", b"\n"), lambda r, h: add_header(h, b"X-CR: a\rb"),
    lambda r, h: add_header(h, b"X-LF: a\nb"), lambda r, h: replace_once(r, h, b"\r\n\r\n", b"\r\n\n"),
    # Control bytes and odd bytes.
    lambda r, h: add_header(h, b"X-C: a" + bytes([r.choice([0, 1, 8, 11, 12, 27, 127])]) + b"b"),
    lambda r, h: add_header(h, b"X-" + bytes([r.choice([0, 1, 32, 34, 40, 44, 47, 59, 64, 91, 123, 127, 200])]) + b"N: v"),
    lambda r, h: add_header(h, b"X-Utf8: caf\xc3\xa9"), lambda r, h: add_header(h, b"X-Latin1: caf\xe9"),
    lambda r, h: add_header(h, b": empty-name"), lambda r, h: add_header(h, b"X-No-Colon"),
    lambda r, h: add_header(h, b"X-Empty:"), lambda r, h: add_header(h, b"X-Tab:\tv\t"),
    lambda r, h: replace_once(r, h, b"/v1/", bytes([r.choice([0, 9, 34, 35, 60, 62, 92, 94, 96, 123, 124, 125, 127, 128, 255])]) + b"/v1/"),
    # Duplicate and conflicting fields.
    lambda r, h: add_header(h, b"Host: other"), lambda r, h: h.replace(b"Host: 127.0.0.1\r\n", b""),
    lambda r, h: add_header(h, b"Content-Length: 0"), lambda r, h: add_header(h, b"Content-Length: 5"),
    lambda r, h: add_header(h, b"Transfer-Encoding: chunked"), lambda r, h: add_header(h, b"Transfer-Encoding: gzip"),
    lambda r, h: add_header(h, b"Transfer-Encoding: identity"), lambda r, h: add_header(h, b"Connection: close"),
    lambda r, h: add_header(h, b"Connection: keep-alive, Upgrade"), lambda r, h: add_header(h, b"Upgrade: websocket"),
    lambda r, h: add_header(h, b"Expect: 100-continue"), lambda r, h: add_header(h, b"Authorization: Bearer client"),
    lambda r, h: add_header(h, b"Content-Length: " + r.choice([b"+1", b"-1", b"01", b"1 1", b"1,1", b"0x1", b" 1", b"1 ", b"", b"99999999999999999999"])),
    lambda r, h: add_header(h, b"Transfer-Encoding: " + r.choice([b"chunked, chunked", b"gzip, chunked", b"chunked, gzip", b"Chunked", b" chunked", b"chunked ", b"chun ked", b"xchunked", b"chunked;a=b"])),
    lambda r, h: add_header(h, b"Content-length: 1\r\ncontent-length: 1"),
    # Method and version variants.
    lambda r, h: r.choice([b"get", b"GETX", b"FOO", b"G@T", b"M-SEARCH", b"PROPFIND", b"QUERY", b"HEAD", b"OPTIONS"]) + h[h.index(b" "):],
    lambda r, h: replace_once(r, h, b"HTTP/1.1", r.choice([b"HTTP/1.2", b"HTTP/2.0", b"HTTP/0.9", b"http/1.1", b"HTTP/1.10", b"HTTP/ 1.1", b"HTTP/1.1 ", b"HTTP/11", b"HTTP/1."])),
    lambda r, h: replace_once(r, h, b" /v1/", r.choice([b" http://h/v1/", b" *", b" v1/", b" //v1/", b" /v1/../v1/"])),
    lambda r, h: h[:h.index(b" HTTP/")] + h[h.index(b"\r\n"):],
]
BODY_MUTATIONS = [
    lambda r, b: replace_once(r, b, b"\r\n", b"\n"), lambda r, b: replace_once(r, b, b"\r\n", b"\r"),
    lambda r, b: b.replace(b"0\r\n", r.choice([b"0 \r\n", b"0\t\r\n", b"00\r\n", b"0;x\r\n", b"-0\r\n", b"0x0\r\n"]), 1),
    lambda r, b: r.choice([b"fffffffffffffffff\r\n", b"ffffffffffffffff\r\n", b"7fffffffffffffff\r\n", b"-5\r\n", b"0x5\r\n", b"5 \r\n", b" 5\r\n", b"5 ;a\r\n", b"5;\r\n", b"5;a=\"b\r\n"]) + b"hello\r\n0\r\n\r\n",
    lambda r, b: b[:-2], lambda r, b: b + b"GET / HTTP/1.1\r\n\r\n", lambda r, b: b[:max(0, len(b) - 7)],
    lambda r, b: b.replace(b"\r\n0\r\n", b"\r\n0\r\nX: a\r\n b\r\n", 1), lambda r, b: b.replace(b"\r\n0\r\n", b"\r\n0\r\nBad Trailer: x\r\n", 1),
]


def random_byte_mutation(rng: random.Random, data: bytes) -> bytes:
    i = rng.randrange(len(data))
    kind = rng.randrange(3)
    byte = bytes([rng.choice([0, 9, 10, 13, 32, 34, 44, 58, 59, 127, 128, 255, rng.randrange(256)])])
    if kind == 0:
        return data[:i] + byte + data[i + 1:]
    if kind == 1:
        return data[:i] + byte + data[i:]
    return data[:i] + data[i + 1:]


def corpus(count: int) -> list[bytes]:
    rng = random.Random(SEED)
    messages = []
    for n in range(count):
        head, body = well_formed(rng)
        if n % 5 == 1:
            head = rng.choice(HEAD_MUTATIONS)(rng, head)
        elif n % 5 == 2:
            body = rng.choice(BODY_MUTATIONS)(rng, body) if body else rng.choice(HEAD_MUTATIONS)(rng, head)
        elif n % 5 == 3:
            head = rng.choice(HEAD_MUTATIONS)(rng, rng.choice(HEAD_MUTATIONS)(rng, head))
        elif n % 5 == 4:
            head = random_byte_mutation(rng, head)
        messages.append(head + body)
    return messages


@dataclass
class Reading:
    """llhttp's reading of the first message in some bytes."""
    url: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    body: bytes = b""
    method: str = ""
    version: str = ""
    head_done: bool = False
    complete: bool = False
    error: str = ""
    messages: int = 0

    # httptools callbacks
    def on_url(self, url: bytes) -> None:
        if self.messages == 0:
            self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.messages == 0:
            self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        if self.messages == 0:
            self.head_done = True
            self.method = self.parser.get_method().decode("latin-1")
            self.version = self.parser.get_http_version()

    def on_body(self, body: bytes) -> None:
        if self.messages == 0:
            self.body += body

    def on_message_complete(self) -> None:
        self.messages += 1
        self.complete = True

    def framing(self) -> str:
        names = [n.lower() for n, _ in self.headers]
        if b"transfer-encoding" in names:
            return "chunked"
        return "length" if b"content-length" in names else "none"


def llhttp_read(data: bytes) -> Reading:
    reading = Reading()
    reading.parser = httptools.HttpRequestParser(reading)
    try:
        reading.parser.feed_data(data)
    except httptools.HttpParserUpgrade:
        reading.error = "upgrade"
    except httptools.HttpParserError as error:
        reading.error = str(error) or type(error).__name__
    return reading


def sidecar_read(messages: list[bytes]) -> list[dict]:
    probe = find_binary().parent / "http1-parse-probe"
    if not probe.is_file():
        pytest.fail(f"no {probe}: run `swift build`")
    records = b"".join(struct.pack(">I", len(m)) + m for m in messages)
    out = subprocess.run([str(probe)], input=records, capture_output=True, check=True, timeout=120).stdout
    return [json.loads(line) for line in out.splitlines()]


def sidecar_accepts(reading: dict) -> bool:
    """The sidecar took the head and the whole body (the call would be forwarded if routed)."""
    return reading["result"] == "complete" and reading["body"]["complete"]


def why_sidecar_is_right(message: bytes, sidecar: dict, llhttp: Reading) -> str | None:
    """Why the sidecar may accept what strict llhttp refuses; None when there is no reason."""
    if sidecar["method"] not in LLHTTP_METHODS and "method" in llhttp.error.lower():
        # RFC 9110 §9.1: a method is any token, and llhttp only knows a fixed list. The sidecar
        # parses any token and then forwards only docs/CONTRACT.md §3's GET/POST/PUT/PATCH/DELETE: other
        # methods get its own 404/405 and never reach Fleet Engine.
        return "method unknown to llhttp"
    lengths = [v for n, v in sidecar["headers"] if n.lower() == "content-length"]
    if "duplicate content-length" in llhttp.error.lower() and len(set(lengths)) == 1:
        # RFC 9110 §8.6 / RFC 9112 §6.3: Content-Length lines with one and the same value may be
        # read as that value. The sidecar refuses differing values, and upstream it writes one
        # Content-Length of its own (from its parse) instead of relaying the client's lines.
        return "identical Content-Length lines"
    if "chunk extension" in llhttp.error.lower() and sidecar["framing"] == "chunked":
        # llhttp checks chunk-ext syntax (here an unclosed quoted-string); the sidecar only
        # refuses control bytes in an extension, so CR LF still ends the size line for every
        # reader (a quote cannot hide one). It never forwards extensions: the body is decoded
        # and sent upstream with a Content-Length, so no later parser reads them.
        return "chunk extension syntax"
    return None


MESSAGE_COUNT = 4000


@pytest.fixture(scope="module")
def differential():
    messages = corpus(MESSAGE_COUNT)
    return messages, sidecar_read(messages), [llhttp_read(m) for m in messages]


def test_sidecar_accepts_nothing_llhttp_refuses_without_a_reason(differential):
    messages, sidecar, llhttp = differential
    unexplained, explained = [], 0
    for message, ours, theirs in zip(messages, sidecar, llhttp):
        if not sidecar_accepts(ours) or (theirs.complete and not theirs.error) or (theirs.complete and theirs.messages >= 1):
            continue
        if theirs.error:
            if why_sidecar_is_right(message, ours, theirs):
                explained += 1
                continue
            unexplained.append(f"llhttp: {theirs.error}; sidecar accepts: {message!r}")
        else:
            unexplained.append(f"llhttp still waits for more, sidecar has the whole message: {message!r}")
    assert not unexplained, f"{len(unexplained)} disagreements, e.g.\n" + "\n".join(unexplained[:10])
    refused_by_sidecar = sum(1 for r in sidecar if not sidecar_accepts(r))
    assert 0.2 * MESSAGE_COUNT < refused_by_sidecar < 0.8 * MESSAGE_COUNT, "the corpus should mix valid and invalid messages"


def test_where_both_accept_method_target_version_framing_and_body_agree(differential):
    messages, sidecar, llhttp = differential
    both, differences = 0, []
    for message, ours, theirs in zip(messages, sidecar, llhttp):
        if not (sidecar_accepts(ours) and theirs.complete):
            continue
        both += 1
        mine = (ours["method"], ours["target"], f"1.{ours['minor']}", ours["framing"], ours["body"]["length"])
        node = (theirs.method, theirs.url.decode("latin-1"), theirs.version, theirs.framing(), len(theirs.body))
        if mine != node:
            differences.append(f"sidecar {mine} llhttp {node}: {message!r}")
    assert not differences, f"{len(differences)} differences, e.g.\n" + "\n".join(differences[:10])
    assert both > MESSAGE_COUNT // 4, f"only {both} messages both accept"


class RecordingUpstream:
    """A Fleet Engine stand-in that reads each connection with llhttp and records every request
    it completes, in order, then answers 200 `{}`."""

    def __init__(self):
        self.requests: list[Reading] = []
        self.lock = threading.Lock()
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.threads: list[threading.Thread] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(connection,), daemon=True)
            thread.start()

    def _serve(self, connection: socket.socket):
        upstream = self

        class Connection(Reading):
            def on_message_complete(self):
                request = Reading(url=self.url, headers=self.headers, body=self.body, method=self.method,
                                  version=self.version, complete=True)
                with upstream.lock:
                    upstream.requests.append(request)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
                self.url, self.headers, self.body = b"", [], b""

            def on_headers_complete(self):
                self.method = self.parser.get_method().decode("latin-1")
                self.version = self.parser.get_http_version()

            def on_url(self, url):
                self.url += url

            def on_header(self, name, value):
                self.headers.append((name, value))

            def on_body(self, body):
                self.body += body

        reading = Connection()
        reading.parser = httptools.HttpRequestParser(reading)
        with connection:
            connection.settimeout(30)
            try:
                while data := connection.recv(65536):
                    reading.parser.feed_data(data)
            except (OSError, httptools.HttpParserError) as error:
                with upstream.lock:
                    upstream.requests.append(Reading(error=f"upstream could not read the request: {error}"))

    def stop(self):
        self.server.close()


def call(address: str, message: bytes) -> int:
    """Sends one message on a new connection; the final answer's status (a 100 Continue is
    skipped), 0 if the connection closed first."""
    host, port = address.rsplit(":", 1)
    status = []

    class Answer:
        def on_headers_complete(self):
            if parser.get_status_code() >= 200:
                status.append(parser.get_status_code())

    parser = httptools.HttpResponseParser(Answer())
    with socket.create_connection((host, int(port)), timeout=10) as client:
        client.sendall(message)
        while not status:
            data = client.recv(65536)
            if not data:
                return 0
            parser.feed_data(data)
    return status[0]


def test_end_to_end_the_upstream_reads_exactly_the_call_llhttp_reads_framed_by_the_sidecar(differential, sidecar_factory):
    messages, sidecar, llhttp = differential
    upstream = RecordingUpstream()
    proxy = sidecar_factory(upstream=f"http://127.0.0.1:{upstream.port}")
    try:
        forwarded, failures = 0, []
        for message, ours, theirs in zip(messages, sidecar, llhttp):
            if not (sidecar_accepts(ours) and theirs.complete and ours["target"].startswith("/v1/providers/")):
                continue
            # Exactly the first message: what follows it would be a second call.
            before = len(upstream.requests)
            status = call(proxy.address, message[:ours["body"]["end"]])
            with upstream.lock:
                received = upstream.requests[before:]
            if status == 200:
                forwarded += 1
                if len(received) != 1:
                    failures.append(f"upstream got {len(received)} requests for {message!r}: "
                                    + "; ".join(f"{r.method} {r.url!r} {r.body!r} {r.error}" for r in received))
                    continue
                got = received[0]
                auth = [v for n, v in got.headers if n.lower() == b"authorization"]
                lengths = [v for n, v in got.headers if n.lower() == b"content-length"]
                problems = [
                    what for what, bad in [
                        ("error", got.error), ("method", got.method != theirs.method), ("target", got.url != theirs.url),
                        ("body", got.body != theirs.body), ("Authorization", len(auth) != 1 or not auth[0].startswith(b"Bearer ")),
                        ("Transfer-Encoding", any(n.lower() == b"transfer-encoding" for n, _ in got.headers)),
                        ("Content-Length", lengths != ([str(len(theirs.body)).encode()] if theirs.body else lengths[:1]) or len(lengths) > 1),
                    ] if bad
                ]
                if problems:
                    failures.append(f"{problems} differ upstream for {message!r}: got {got.method} {got.url!r} {got.headers}")
            elif received:
                failures.append(f"answered {status} but the upstream got {len(received)} requests for {message!r}")
        assert not failures, f"{len(failures)} failures, e.g.\n" + "\n".join(failures[:10])
        assert forwarded >= 200, f"only {forwarded} calls went through the sidecar"
    finally:
        upstream.stop()
