"""A deliberately small HTTP/2 client (RFC 9113) for what grpcio cannot do: send a request with a
`grpc-timeout` and *not* cancel it when that passes, and send malformed frames.

It speaks h2c with prior knowledge, encodes header fields as HPACK literals without indexing and
without Huffman coding (always valid, RFC 7541 §6.2.2), and decodes the peer's header blocks with
the `hpack` package (`Frame.headers`): tests observe frame types, flags, stream ids, error codes,
header fields, and the time frames arrive.
"""
from __future__ import annotations

import dataclasses
import socket
import struct
import time

import hpack

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM = 0x1
ACK = 0x1
END_HEADERS = 0x4

NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR = 0, 1, 2, 3
FRAME_SIZE_ERROR, REFUSED_STREAM, CANCEL, COMPRESSION_ERROR = 6, 7, 8, 9


@dataclasses.dataclass(frozen=True)
class Frame:
    type: int
    flags: int
    stream_id: int
    payload: bytes
    at: float  # time.monotonic() when read
    # HEADERS: the decoded header block (CONTINUATIONs folded in), else ().
    headers: tuple[tuple[str, str], ...] = ()

    def header(self, name: str) -> str | None:
        return next((value for key, value in self.headers if key == name), None)

    @property
    def error_code(self) -> int:
        """For RST_STREAM and GOAWAY."""
        if self.type == RST_STREAM:
            return struct.unpack(">I", self.payload[:4])[0]
        if self.type == GOAWAY:
            return struct.unpack(">I", self.payload[4:8])[0]
        raise ValueError("no error code in this frame type")


def frame(frame_type: int, flags: int, stream_id: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([frame_type, flags]) + struct.pack(">I", stream_id & 0x7FFFFFFF) + payload


def hpack_integer(value: int, prefix_bits: int, first_byte: int = 0) -> bytes:
    """RFC 7541 §5.1."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first_byte | value])
    out = bytearray([first_byte | limit])
    value -= limit
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_literal(name: str, value: str) -> bytes:
    """Literal header field without indexing, new name, no Huffman (RFC 7541 §6.2.2)."""
    name_bytes, value_bytes = name.encode("ascii"), value.encode("utf-8")
    return b"\x00" + hpack_integer(len(name_bytes), 7) + name_bytes + hpack_integer(len(value_bytes), 7) + value_bytes


def grpc_message(payload: bytes, compressed: bool = False) -> bytes:
    """The 5-byte gRPC length prefix and the message."""
    return bytes([1 if compressed else 0]) + struct.pack(">I", len(payload)) + payload


class ConnectionClosed(Exception):
    pass


class H2Connection:
    """One h2c connection. Answers SETTINGS and PING itself and returns flow-control credit for
    the DATA it reads, so a test can wait on the frames it cares about."""

    def __init__(self, address: str, *, timeout: float = 10.0):
        host, port = address.rsplit(":", 1)
        self.address = address
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._buffer = b""
        self._decoder = hpack.Decoder()
        self._decoder.max_header_list_size = 1 << 20
        self._block: tuple[int, int, bytes] | None = None  # HEADERS waiting for CONTINUATIONs
        self.frames: list[Frame] = []
        self.sock.sendall(PREFACE + frame(SETTINGS, 0, 0))

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_request(self, stream_id: int, headers: list[tuple[str, str]], body: bytes | None = None) -> float:
        """HEADERS (and one DATA frame with END_STREAM if `body` is given). Returns the time sent."""
        block = b"".join(hpack_literal(name, value) for name, value in headers)
        flags = END_HEADERS | (END_STREAM if body is None else 0)
        data = frame(HEADERS, flags, stream_id, block)
        if body is not None:
            data += frame(DATA, END_STREAM, stream_id, body)
        sent = time.monotonic()
        self.send(data)
        return sent

    def grpc_headers(self, path: str, *extra: tuple[str, str]) -> list[tuple[str, str]]:
        return [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", self.address),
                ("content-type", "application/grpc"), ("te", "trailers"), *extra]

    def read_frame(self, deadline: float) -> Frame | None:
        """The next frame, or None when `deadline` (monotonic) passes first; raises
        ConnectionClosed at EOF or on a reset."""
        while True:
            if len(self._buffer) >= 9:
                length = int.from_bytes(self._buffer[:3], "big")
                if len(self._buffer) >= 9 + length:
                    header, payload = self._buffer[:9], self._buffer[9:9 + length]
                    self._buffer = self._buffer[9 + length:]
                    stream_id = struct.unpack(">I", header[5:9])[0] & 0x7FFFFFFF
                    received = self._fold(Frame(header[3], header[4], stream_id, payload, time.monotonic()))
                    if received is None:
                        continue
                    self._answer(received)
                    self.frames.append(received)
                    return received
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            except OSError as error:
                raise ConnectionClosed(str(error)) from error
            if not chunk:
                raise ConnectionClosed("EOF")
            self._buffer += chunk

    def _fold(self, received: Frame) -> Frame | None:
        """Decodes header blocks; a HEADERS frame is returned once its block is complete."""
        if received.type == HEADERS:
            block = received.payload
            if received.flags & 0x8:  # PADDED
                block = block[1:len(block) - block[0]]
            if received.flags & 0x20:  # PRIORITY
                block = block[5:]
            self._block = (received.flags, received.stream_id, block)
        elif received.type == CONTINUATION and self._block is not None:
            flags, stream_id, block = self._block
            self._block = (flags | (received.flags & END_HEADERS), stream_id, block + received.payload)
        else:
            return received
        flags, stream_id, block = self._block
        if not flags & END_HEADERS:
            return None
        self._block = None
        headers = tuple((name.decode() if isinstance(name, bytes) else name, value.decode() if isinstance(value, bytes) else value)
                        for name, value in self._decoder.decode(block, raw=True))
        return Frame(HEADERS, flags, stream_id, block, received.at, headers)

    def _answer(self, received: Frame) -> None:
        try:
            if received.type == SETTINGS and not received.flags & ACK:
                self.send(frame(SETTINGS, ACK, 0))
            elif received.type == PING and not received.flags & ACK:
                self.send(frame(PING, ACK, 0, received.payload))
            elif received.type == DATA and received.payload:
                credit = struct.pack(">I", len(received.payload))
                self.send(frame(WINDOW_UPDATE, 0, 0, credit) + frame(WINDOW_UPDATE, 0, received.stream_id, credit))
        except OSError:
            pass  # the peer is closing; the next read reports it

    def wait_for(self, predicate, timeout: float) -> Frame | None:
        """The first frame (already read or arriving within `timeout`) that satisfies `predicate`;
        None on timeout or when the connection closes first."""
        for seen in self.frames:
            if predicate(seen):
                return seen
        deadline = time.monotonic() + timeout
        while True:
            try:
                received = self.read_frame(deadline)
            except ConnectionClosed:
                return None
            if received is None:
                return None
            if predicate(received):
                return received

    def wait_for_stream_end(self, stream_id: int, timeout: float) -> Frame | None:
        """HEADERS or DATA with END_STREAM, RST_STREAM for the stream, or GOAWAY."""
        return self.wait_for(
            lambda f: (f.stream_id == stream_id and (f.type == RST_STREAM or (f.type in (HEADERS, DATA) and f.flags & END_STREAM)))
            or f.type == GOAWAY,
            timeout)
