"""A loopback token provider in Python, the operator's backend in miniature (docs/CONTRACT.md §4).

It serves `GET /token/{provider}/{type}/{id}` with `{"token": <JWT>, "expirationTimestamp": …}`
exactly as the Swift `fleet-token-proxy stand-in provider` does, but in the test process, so a
test can count the fetches per entity and switch how the next answers go wrong.
"""
from __future__ import annotations

import collections
import json
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from fleet_entities import FLEET, TYPES, Entity
from fleet_jwt import SigningKey, claims_for


class StandInProvider:
    """Start with `start()`; `url_template` is what the sidecar's `--provider-url` takes.

    Behaviour knobs (reset with `reset()`):
      delay     seconds to wait before answering
      status    answer this HTTP status with a JSON error body instead of a token
      answer    "token" (normal), "garbage" (200, not JSON), "no_token" (200, JSON without a token)
    """

    def __init__(self, key: SigningKey, *, lifetime: int = 3600):
        self.key = key
        self.lifetime = lifetime
        self._lock = threading.Lock()
        self._fetches: collections.Counter[Entity] = collections.Counter()
        self._server: ThreadingHTTPServer | None = None
        self.reset()

    def reset(self) -> None:
        self.delay = 0.0
        self.status: int | None = None
        self.answer = "token"

    # -- counts ------------------------------------------------------------------------------

    def fetches(self, entity: Entity) -> int:
        with self._lock:
            return self._fetches[entity]

    def fetch_counts(self) -> dict[Entity, int]:
        with self._lock:
            return dict(self._fetches)

    def _count(self, entity: Entity) -> None:
        with self._lock:
            self._fetches[entity] += 1

    # -- serving -----------------------------------------------------------------------------

    def start(self, port: int = 0) -> "StandInProvider":
        """Serves on `port` (0: any free one; a given one lets a restarted provider keep its URL)."""
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 (http.server's spelling)
                provider._handle(self)

            def log_message(self, format, *args):  # keep pytest's output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="standin-provider", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.server_address[1]

    @property
    def url_template(self) -> str:
        return f"http://127.0.0.1:{self.port}/token/{{provider}}/{{type}}/{{id}}"

    def fetch_token(self, entity: Entity) -> str:
        """Asks this provider over HTTP, as a client of it would (the direct-mode tests do)."""
        quote = lambda s: urllib.parse.quote(s, safe="")  # noqa: E731
        url = f"http://127.0.0.1:{self.port}/token/{quote(entity.provider)}/{quote(entity.type)}/{quote(entity.id)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.load(response)["token"]

    def _handle(self, request: BaseHTTPRequestHandler) -> None:
        entity = _entity_in_path(request.path)
        if entity is None:
            return _send(request, 404, {"error": "not a token path: want /token/{provider}/{type}/{id}"})
        self._count(entity)
        delay, status, answer = self.delay, self.status, self.answer
        if delay:
            time.sleep(delay)
        if status is not None:
            return _send(request, status, {"error": f"the stand-in provider was told to answer {status}"})
        if answer == "garbage":
            return _send_bytes(request, 200, "text/html", b"<html>token service</html>")
        claims = claims_for(entity, lifetime=self.lifetime)
        body = {"expirationTimestamp": claims["exp"]}
        if answer != "no_token":
            body["token"] = self.key.mint(claims)
        _send(request, 200, body)


def _entity_in_path(path: str) -> Entity | None:
    segments = path.split("?", 1)[0].split("/")
    if len(segments) != 5 or segments[0] or segments[1] != "token":
        return None
    provider, entity_type, entity_id = (urllib.parse.unquote(s, errors="strict") for s in segments[2:])
    if not provider or entity_type not in TYPES or not entity_id:
        return None
    if entity_type == FLEET and entity_id != "*":
        return None
    return Entity(provider, entity_type, entity_id)


def _send(request: BaseHTTPRequestHandler, status: int, body: dict) -> None:
    _send_bytes(request, status, "application/json", json.dumps(body).encode("utf-8"))


def _send_bytes(request: BaseHTTPRequestHandler, status: int, content_type: str, body: bytes) -> None:
    try:
        request.send_response(status)
        request.send_header("Content-Type", content_type)
        request.send_header("Content-Length", str(len(body)))
        request.send_header("Cache-Control", "no-store")
        request.end_headers()
        request.wfile.write(body)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the sidecar gave up waiting (a deadline test); nothing to answer
