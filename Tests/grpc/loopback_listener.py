"""A loopback listening socket that hands each accepted connection to a thread of its own: the
part the test relays (protocol_mux.ProtocolMux, fault_relay.FaultRelay) share."""
from __future__ import annotations

import socket
import threading


class LoopbackListener:
    """Subclasses set their own state first, then call `__init__` (accepting starts at once),
    and implement `_serve(client)`; `_accepted` may be overridden to decide before a thread."""

    def __init__(self, listen: tuple[str, int], *, name: str):
        self._listener = socket.create_server(listen, backlog=512)
        self._closed = False
        threading.Thread(target=self._accept_loop, name=name, daemon=True).start()

    @property
    def address(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"{host}:{port}"

    def _stop_listening(self) -> None:
        self._closed = True
        try:
            self._listener.close()
        except OSError:
            pass

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._accepted(client)

    def _accepted(self, client: socket.socket) -> None:
        threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        raise NotImplementedError
