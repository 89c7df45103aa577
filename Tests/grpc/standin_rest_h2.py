"""A stand-in Fleet Engine answering REST over HTTP/2 (h2c with prior knowledge, or TLS with
ALPN h2), for the sidecar's REST-over-HTTP/2 upstream (`--upstream-protocol h2`, and `auto` on
https). Over TLS, a connection whose ALPN is not h2 (the context offers http/1.1 only, or no
ALPN) is served as plain HTTP/1.1 keep-alive (Content-Length or chunked bodies), tokens judged the same way;
`protocols` lists each connection's ALPN answer.

Every request's token is judged as the gRPC stand-in does (`TokenVerifier.check_metadata`) for
the vehicle and delivery vehicle paths (`_rest_entity`); what it saw is kept in `requests`.
Entity ids that ask for a behaviour:
  once401-…       the first request for the id is answered 401 whatever its token (over
                  HTTP/1.1 with an empty body; over HTTP/2 with Fleet Engine's JSON error)
  once401body-…   the same, and over HTTP/1.1 with the JSON error body too
  refuse-…        the first request for the id is reset with REFUSED_STREAM
  bigchunked-…    over HTTP/1.1: a 1 MiB answer in 64 chunks of 16 KiB ("a"*16384, "b"*16384, …)
  resetbefore-…   reset (INTERNAL_ERROR) before any answer head
  resetafter-…    a head and some DATA, then reset
  nolen-…         the answer has no content-length (the sidecar relays it chunked)
  badfield-…      the answer carries a field whose value holds a control byte (0x01)
"""
from __future__ import annotations

import dataclasses
import json
import socket
import ssl
import threading
import time

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions

from fleet_entities import DELIVERY_VEHICLE, VEHICLE, Entity, valid_entity_id
from fleet_jwt import TokenVerifier

_COLLECTIONS = {"vehicles": VEHICLE, "deliveryVehicles": DELIVERY_VEHICLE}


def _rest_entity(path: str) -> Entity | None:
    """`/v1/providers/{p}/{vehicles|deliveryVehicles}/{id}[:verb]` → that entity."""
    segments = path.split("?", 1)[0].split("/")
    if len(segments) != 6 or segments[:3] != ["", "v1", "providers"] or segments[4] not in _COLLECTIONS:
        return None
    entity_id = segments[5].split(":", 1)[0]
    return Entity(segments[3], _COLLECTIONS[segments[4]], entity_id) if valid_entity_id(entity_id) else None


@dataclasses.dataclass
class SeenRequest:
    connection: int
    stream: int
    headers: list[tuple[str, str]]
    body: bytes
    status: int

    def header(self, name: str) -> list[str]:
        return [v for k, v in self.headers if k == name]


class StandInRESTOverH2:
    def __init__(self, keys, *, tls_context: ssl.SSLContext | None = None):
        self.verifier = TokenVerifier(keys)
        self.tls_context = tls_context
        self.requests: list[SeenRequest] = []
        self.connections = 0
        self.protocols: list[str | None] = []
        self._lock = threading.Lock()
        self._first_seen: set[str] = set()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._stopped = False

    def start(self) -> "StandInRESTOverH2":
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stopped = True
        self._listener.close()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.connections = 0
            self.protocols.clear()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self._serve, args=(sock, number), daemon=True).start()

    def _first(self, key: str) -> bool:
        with self._lock:
            if key in self._first_seen:
                return False
            self._first_seen.add(key)
            return True

    def _serve(self, sock: socket.socket, number: int) -> None:
        try:
            if self.tls_context is not None:
                sock = self.tls_context.wrap_socket(sock, server_side=True)
                protocol = sock.selected_alpn_protocol()
                with self._lock:
                    self.protocols.append(protocol)
                if protocol != "h2":
                    return self._serve_http1(sock, number)
            conn = h2.connection.H2Connection(h2.config.H2Configuration(
                client_side=False, header_encoding="utf-8", validate_outbound_headers=False,
                normalize_outbound_headers=False))
            conn.initiate_connection()
            sock.sendall(conn.data_to_send())
            heads: dict[int, list[tuple[str, str]]] = {}
            bodies: dict[int, bytearray] = {}
            while True:
                data = sock.recv(65536)
                if not data:
                    return
                for event in conn.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        heads[event.stream_id] = list(event.headers)
                        bodies[event.stream_id] = bytearray()
                    elif isinstance(event, h2.events.DataReceived):
                        bodies[event.stream_id] += event.data
                        conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                    if getattr(event, "stream_ended", None) is not None and event.stream_id in heads:
                        self._answer(conn, number, event.stream_id, heads.pop(event.stream_id), bytes(bodies.pop(event.stream_id)))
                sock.sendall(conn.data_to_send())
        except (OSError, h2.exceptions.ProtocolError):
            return
        finally:
            sock.close()

    def _serve_http1(self, sock, number: int) -> None:
        """HTTP/1.1 keep-alive, Content-Length or chunked bodies (no trailers): each request recorded as an HTTP/2
        one would be (pseudo-fields from its request line, stream 0) and its token judged."""
        buffered = b""
        while True:
            while b"\r\n\r\n" not in buffered:
                data = sock.recv(65536)
                if not data:
                    return
                buffered += data
            head, _, buffered = buffered.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = [(":method", method), (":path", path)]
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers.append((name.strip().lower(), value.strip()))
            if dict(headers).get("transfer-encoding") == "chunked":
                body = bytearray()
                while True:
                    while b"\r\n" not in buffered:
                        if not (data := sock.recv(65536)):
                            return
                        buffered += data
                    size_line, _, buffered = buffered.partition(b"\r\n")
                    size = int(size_line, 16)
                    while len(buffered) < size + 2:
                        if not (data := sock.recv(65536)):
                            return
                        buffered += data
                    if size == 0:
                        buffered = buffered[2:]  # no trailers: the last chunk's CRLF ends the body
                        break
                    body += buffered[:size]
                    buffered = buffered[size + 2:]
                body = bytes(body)
            else:
                length = int(dict(headers).get("content-length", "0"))
                while len(buffered) < length:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffered += data
                body, buffered = buffered[:length], buffered[length:]
            entity = _rest_entity(path)
            authorization = [v for k, v in headers if k == "authorization"]
            ok = entity is not None and self.verifier.check_metadata(authorization, entity, time.time()).ok
            entity_id = path.split("?", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]
            once = entity_id.startswith(("once401-", "once401body-"))
            status = 200 if ok and not (once and self._first(entity_id)) else 401
            with self._lock:
                self.requests.append(SeenRequest(number, 0, headers, body, status))
            # Over HTTP/1.1 the once401- answer has no body, as an HTTP/2 client's retry needs.
            answer = json.dumps({"method": method, "bodyBytes": len(body)}).encode() if status == 200 or not ok else b""
            if status == 401 and entity_id.startswith("once401body-"):
                answer = b'{"error":{"code":401,"status":"UNAUTHENTICATED"}}'
            if status == 200 and entity_id.startswith("bigchunked-"):
                sock.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n")
                for i in range(64):
                    sock.sendall(b"4000\r\n" + bytes([0x61 + i % 26]) * 0x4000 + b"\r\n")
                sock.sendall(b"0\r\n\r\n")
                continue
            sock.sendall(b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                         b"x-standin: rest-http1\r\n\r\n%s" % (status, len(answer), answer))

    def _answer(self, conn, number: int, stream: int, headers, body: bytes) -> None:
        pseudo = dict((k, v) for k, v in headers if k.startswith(":"))
        path = pseudo.get(":path", "")
        entity = _rest_entity(path)
        entity_id = path.split("?", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]

        def record(status: int) -> None:
            with self._lock:
                self.requests.append(SeenRequest(number, stream, list(headers), body, status))

        def send(status: int, answer: bytes, extra=(), length: bool = True) -> None:
            fields = [(":status", str(status)), ("content-type", "application/json"), *extra]
            if length:
                fields.append(("content-length", str(len(answer))))
            conn.send_headers(stream, fields)
            conn.send_data(stream, answer, end_stream=True)

        if entity is None:
            record(404)
            return send(404, b'{"error":"no such path"}')
        if entity_id.startswith("refuse-") and self._first(entity_id):
            record(0)
            return conn.reset_stream(stream, h2.errors.ErrorCodes.REFUSED_STREAM)
        if entity_id.startswith("resetbefore-"):
            record(0)
            return conn.reset_stream(stream, h2.errors.ErrorCodes.INTERNAL_ERROR)
        authorization = [v for k, v in headers if k == "authorization"]
        verdict = self.verifier.check_metadata(authorization, entity, time.time())
        if not verdict.ok or (entity_id.startswith(("once401-", "once401body-")) and self._first(entity_id)):
            record(401)
            return send(401, b'{"error":{"code":401,"status":"UNAUTHENTICATED"}}')
        record(200)
        answer = json.dumps({"name": entity.resource_name(), "method": pseudo.get(":method"),
                             "bodyBytes": len(body)}).encode()
        if entity_id.startswith("resetafter-"):
            conn.send_headers(stream, [(":status", "200"), ("content-type", "application/json")])
            conn.send_data(stream, answer[:10])
            return conn.reset_stream(stream, h2.errors.ErrorCodes.INTERNAL_ERROR)
        if entity_id.startswith("nolen-"):
            return send(200, answer, length=False)
        if entity_id.startswith("badfield-"):
            return send(200, answer, extra=[("x-bad", "a\x01b"), ("x-good", "fine")])
        send(200, answer, extra=[("x-standin", "rest-h2")])
