"""One loopback port in front of two servers, told apart by the connection preface: HTTP/2 (the
`PRI * HTTP/2.0` preface of h2c with prior knowledge) goes to one, anything else to the other.

The sidecar has one `--upstream` for REST (HTTP/1.1) and gRPC (h2c), while grpcio's server
speaks only HTTP/2; this lets the stand-in Fleet Engine answer both on one address. It also
counts the connections per protocol, so a test can see how many the sidecar opens.
"""
from __future__ import annotations

import collections
import socket
import threading
import time

from loopback_listener import LoopbackListener

H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


class ProtocolMux(LoopbackListener):
    def __init__(self, h2_backend: tuple[str, int], http1_backend: tuple[str, int], *, listen: tuple[str, int] = ("127.0.0.1", 0)):
        self.backends = {"h2": h2_backend, "http1": http1_backend}
        self._lock = threading.Lock()
        self._opened: collections.Counter[str] = collections.Counter()
        self._open: collections.Counter[str] = collections.Counter()
        self._bytes_in: collections.Counter[str] = collections.Counter()
        self._sockets: set[socket.socket] = set()
        super().__init__(listen, name="protocol-mux")

    def connections_opened(self, protocol: str) -> int:
        """Connections accepted so far that spoke `protocol` ("h2" or "http1")."""
        with self._lock:
            return self._opened[protocol]

    def bytes_from_clients(self, protocol: str) -> int:
        """Bytes received from clients on `protocol` connections so far (what went upstream)."""
        with self._lock:
            return self._bytes_in[protocol]

    def _count_bytes(self, protocol: str, count: int) -> None:
        with self._lock:
            self._bytes_in[protocol] += count

    def connections_open(self, protocol: str) -> int:
        with self._lock:
            return self._open[protocol]

    def close(self) -> None:
        self._stop_listening()
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            _quietly(sock.close)

    def _serve(self, client: socket.socket) -> None:
        protocol = self._sniff(client)
        if protocol is None:
            return _quietly(client.close)
        try:
            backend = socket.create_connection(self.backends[protocol], timeout=5)
            backend.settimeout(None)
        except OSError:
            return _quietly(client.close)
        with self._lock:
            self._opened[protocol] += 1
            self._open[protocol] += 1
            self._sockets.update((client, backend))
        splice = _Splice(client, backend)
        threading.Thread(target=splice.pump, args=(backend, client), daemon=True).start()
        splice.pump(client, backend, lambda count: self._count_bytes(protocol, count))
        splice.finished.wait()
        with self._lock:
            self._open[protocol] -= 1
            self._sockets.difference_update((client, backend))
        _quietly(client.close)
        _quietly(backend.close)

    @staticmethod
    def _sniff(client: socket.socket) -> str | None:
        """Peeks until the first bytes tell the protocol; nothing is consumed."""
        client.settimeout(10)
        try:
            seen = b""
            while len(seen) < len(H2_PREFACE):
                seen = client.recv(len(H2_PREFACE), socket.MSG_PEEK)
                if not seen:
                    return None
                if not H2_PREFACE.startswith(seen[: len(H2_PREFACE)]):
                    return "http1"
                if len(seen) < len(H2_PREFACE):
                    time.sleep(0.001)
            return "h2"
        except OSError:
            return None
        finally:
            client.settimeout(None)


class _Splice:
    """Copies both ways between two sockets. A clean EOF is passed on as a half-close; an error
    on either side ends both, so a broken connection never lingers half-open."""

    def __init__(self, a: socket.socket, b: socket.socket):
        self._sockets = (a, b)
        self._lock = threading.Lock()
        self._running = 2
        self.finished = threading.Event()

    def pump(self, source: socket.socket, destination: socket.socket, count=None) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if count is not None:
                    count(len(data))
                destination.sendall(data)
            _quietly(lambda: destination.shutdown(socket.SHUT_WR))
        except OSError:
            for sock in self._sockets:
                _quietly(lambda: sock.shutdown(socket.SHUT_RDWR))
        with self._lock:
            self._running -= 1
            if self._running == 0:
                self.finished.set()


def _quietly(action) -> None:
    try:
        action()
    except OSError:
        pass
