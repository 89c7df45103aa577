"""A TCP relay between the sidecar and the stand-in Fleet Engine that can misbehave on command,
for the soak (scripts/soak): the network faults an upstream path has, without changing the
stand-in.

Modes (`mode`, switched at any time):
  pass        bytes go both ways untouched
  blackhole   nothing more goes either way on any connection, and new connections are accepted
              and never answered; `restore()` then resets the held connections (a path that came
              back without them, as after a NAT or load-balancer restart)
  reset       every open connection is reset (RST) now, and new ones at once
  hostile_h2  new HTTP/2 connections meet a server that sends a connection error (DATA on stream
              0, RFC 9113 §6.1: PROTOCOL_ERROR) after its SETTINGS; HTTP/1.1 passes
"""
from __future__ import annotations

import socket
import struct
import threading

from loopback_listener import LoopbackListener
from protocol_mux import H2_PREFACE


def _frame(frame_type: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([frame_type, flags]) + struct.pack(">I", stream) + payload


def _reset(sock: socket.socket) -> None:
    """Closes with RST (linger 0), as a peer that crashed or a middlebox that dropped state."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    _close(sock)


def _close(sock: socket.socket) -> None:
    """shutdown() first: close() alone would neither wake a pump thread blocked in recv() on the
    socket nor end the connection while that recv() holds it."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


class _Pair:
    def __init__(self, relay: "FaultRelay", client: socket.socket):
        self.relay = relay
        self.client = client
        self.backend: socket.socket | None = None
        self.closed = False

    def close(self, *, abrupt: bool) -> None:
        if self.closed:
            return
        self.closed = True
        for sock in (self.client, self.backend):
            if sock is None:
                continue
            if abrupt:
                _reset(sock)
            else:
                _close(sock)


class FaultRelay(LoopbackListener):
    def __init__(self, backend: tuple[str, int], *, listen: tuple[str, int] = ("127.0.0.1", 0)):
        self.backend = backend
        self.mode = "pass"
        self._lock = threading.Lock()
        self._pairs: set[_Pair] = set()
        self.accepted = 0
        self.hostile_sessions = 0
        super().__init__(listen, name="fault-relay")

    def set_mode(self, mode: str) -> None:
        assert mode in ("pass", "blackhole", "reset", "hostile_h2"), mode
        self.mode = mode
        if mode in ("reset", "hostile_h2"):
            self._close_all(abrupt=True)

    def restore(self) -> None:
        """Back to `pass`; connections held by a black hole are reset."""
        held = self.mode == "blackhole"
        self.mode = "pass"
        if held:
            self._close_all(abrupt=True)

    def open_connections(self) -> int:
        with self._lock:
            return len(self._pairs)

    def close(self) -> None:
        self._stop_listening()
        self._close_all(abrupt=False)

    def _close_all(self, *, abrupt: bool) -> None:
        with self._lock:
            pairs = list(self._pairs)
            self._pairs.clear()
        for pair in pairs:
            pair.close(abrupt=abrupt)

    def _accepted(self, client: socket.socket) -> None:
        self.accepted += 1
        if self.mode == "reset":
            return _reset(client)
        pair = _Pair(self, client)
        with self._lock:
            self._pairs.add(pair)
        threading.Thread(target=self._relay, args=(pair,), name="fault-relay-conn", daemon=True).start()

    def _relay(self, pair: _Pair) -> None:
        try:
            if self.mode == "hostile_h2":
                first = pair.client.recv(len(H2_PREFACE), socket.MSG_PEEK | socket.MSG_WAITALL)
                if first == H2_PREFACE:
                    return self._hostile(pair)
            pair.backend = socket.create_connection(self.backend, timeout=5)
            pair.backend.settimeout(None)
        except OSError:
            return self._drop(pair, abrupt=True)
        threading.Thread(target=self._pump, args=(pair, pair.backend, pair.client), name="fault-relay-back", daemon=True).start()
        self._pump(pair, pair.client, pair.backend)

    def _hostile(self, pair: _Pair) -> None:
        """SETTINGS, then DATA on stream 0: a connection error the sidecar must close on."""
        self.hostile_sessions += 1
        try:
            pair.client.recv(len(H2_PREFACE))
            pair.client.sendall(_frame(0x4, 0, 0) + _frame(0x0, 0, 0, b"hostile"))
            while pair.client.recv(65536):
                pass
        except OSError:
            pass
        self._drop(pair, abrupt=False)

    def _pump(self, pair: _Pair, source: socket.socket, sink: socket.socket) -> None:
        try:
            while not pair.closed:
                data = source.recv(65536)
                if not data:
                    break
                if self.mode == "blackhole":
                    continue  # swallowed: the path is dead, the socket still open
                sink.sendall(data)
        except OSError:
            pass
        self._drop(pair, abrupt=False)

    def _drop(self, pair: _Pair, *, abrupt: bool) -> None:
        with self._lock:
            self._pairs.discard(pair)
        pair.close(abrupt=abrupt)
