"""The delay relay of scripts/bench's remote mode: a loopback TCP relay that makes a round trip
of 2 x DELAY between its clients and a target, as a path to a distant server would.

  python3 -m benchstats.relay LISTEN_PORT TARGET_PORT DELAY_MS

prints `listening PORT` once it accepts, then one `accept UNIX_TIME` line per connection (the
script keeps them: upstream connections opened per round).

Each chunk read from one side is written to the other DELAY after it was read: chunks of one
direction leave in the order they came, and the delays of chunks in flight overlap (a chunk's
delay runs from its own arrival, never from the previous chunk's departure). The TCP handshake
pays a round trip too: a client's first bytes reach the target no sooner than 3 x DELAY after
the accept (SYN, SYN-ACK, then the data), as on a real path, although the local connect
returned at once. An end of stream (EOF, close) travels behind the data, DELAY late, like one.
"""
from __future__ import annotations

import asyncio
import collections
import sys
import time

# Bytes a direction holds before it stops reading its source: every buffer is bounded.
HIGH_WATER = 4 * 1024 * 1024
LOW_WATER = HIGH_WATER // 2

_EOF = b""


class DelayLine:
    """The chunks of one direction on their way: due times never decrease, so the queue is in
    order of arrival and of departure alike. `deliver` writes a chunk (or, for the empty one,
    ends the stream) when it is due."""

    def __init__(self, loop: asyncio.AbstractEventLoop, delay_s: float, deliver, not_before: float = 0.0):
        self.loop = loop
        self.delay_s = delay_s
        self.deliver = deliver
        self.not_before = not_before  # the earliest time a chunk may leave (the handshake's round trip)
        self.queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self.queued_bytes = 0
        self.timer: asyncio.TimerHandle | None = None
        self.on_drained = None  # called once queued_bytes falls below LOW_WATER

    def due(self, arrival: float) -> float:
        return max(arrival + self.delay_s, self.not_before)

    def push(self, chunk: bytes) -> None:
        due = self.due(self.loop.time())
        if self.queue and due < self.queue[-1][0]:
            due = self.queue[-1][0]  # a clock step back must not reorder
        self.queue.append((due, chunk))
        self.queued_bytes += len(chunk)
        if self.timer is None:
            self.timer = self.loop.call_at(due, self._flush)

    def _flush(self) -> None:
        self.timer = None
        now = self.loop.time()
        while self.queue and self.queue[0][0] <= now:
            _, chunk = self.queue.popleft()
            self.queued_bytes -= len(chunk)
            self.deliver(chunk)
        if self.queue:
            self.timer = self.loop.call_at(self.queue[0][0], self._flush)
        if self.on_drained is not None and self.queued_bytes < LOW_WATER:
            drained, self.on_drained = self.on_drained, None
            drained()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.queue.clear()
        self.queued_bytes = 0


class Side(asyncio.Protocol):
    """One socket of a relayed connection: what it reads goes into `outgoing`, the delay line
    towards the other side."""

    def __init__(self):
        self.transport: asyncio.Transport | None = None
        self.outgoing: DelayLine | None = None
        self.peer: Side | None = None
        self.closed = False
        self.early: list[bytes] = []  # chunks due before this side's connect completed
        # Reading stops while either holds: this side's delay line is full, or the other
        # side's socket cannot take more (its transport's write buffer is past its high mark).
        self.line_full = False
        self.peer_full = False

    def connection_made(self, transport) -> None:
        self.transport = transport
        early, self.early = self.early, []
        for chunk in early:
            self.write(chunk)

    def data_received(self, data: bytes) -> None:
        self.outgoing.push(data)
        if self.outgoing.queued_bytes > HIGH_WATER:
            self.line_full = True
            self.outgoing.on_drained = self._line_drained
            self._update_reading()

    def _line_drained(self) -> None:
        self.line_full = False
        self._update_reading()

    def _update_reading(self) -> None:
        if self.closed or self.transport is None:
            return
        if self.line_full or self.peer_full:
            self.transport.pause_reading()
        else:
            self.transport.resume_reading()

    def pause_writing(self) -> None:
        if self.peer is not None:
            self.peer.peer_full = True
            self.peer._update_reading()

    def resume_writing(self) -> None:
        if self.peer is not None:
            self.peer.peer_full = False
            self.peer._update_reading()

    def eof_received(self) -> bool:
        self.outgoing.push(_EOF)
        return True  # half-close: the other direction goes on

    def connection_lost(self, exc) -> None:
        self.closed = True
        if self.outgoing is not None:
            self.outgoing.push(_EOF)

    def write(self, chunk: bytes) -> None:
        """The other side's chunk, now due: written, or (empty) the end of the stream."""
        if self.transport is None and not self.closed:
            self.early.append(chunk)
            return
        if self.closed:
            return
        if chunk:
            self.transport.write(chunk)
        elif self.peer is not None and self.peer.closed:
            self.transport.close()
        elif self.transport.can_write_eof():
            try:
                self.transport.write_eof()
            except OSError:  # the peer has gone already (reset): nothing left to end
                self.transport.close()
        else:
            self.transport.close()


def pair(loop, client: Side, delay_s: float) -> Side:
    """The target side of CLIENT's connection, accepted now, and the delay lines between them."""
    target = Side()
    client.peer, target.peer = target, client
    # The client's bytes wait for the handshake's round trip, then travel one delay more.
    client.outgoing = DelayLine(loop, delay_s, target.write, not_before=loop.time() + 3 * delay_s)
    target.outgoing = DelayLine(loop, delay_s, client.write)
    return target


async def connect(loop, client: Side, target: Side, target_port: int, delay_s: float) -> None:
    try:
        await asyncio.sleep(delay_s)  # the SYN on its way
        await loop.create_connection(lambda: target, "127.0.0.1", target_port)
    except OSError:
        target.closed = True
        client.outgoing.cancel()
        if client.transport is not None:
            client.transport.close()


def serve(listen_port: int, target_port: int, delay_ms: float, out=sys.stdout) -> None:
    delay_s = delay_ms / 1000

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def accepted() -> Side:
            client = Side()
            original = client.connection_made

            def made(transport) -> None:
                original(transport)
                print(f"accept {time.time():.6f}", file=out, flush=True)
                target = pair(loop, client, delay_s)
                loop.create_task(connect(loop, client, target, target_port, delay_s))

            client.connection_made = made
            return client

        server = await loop.create_server(accepted, "127.0.0.1", listen_port, backlog=1024)
        print(f"listening {server.sockets[0].getsockname()[1]}", file=out, flush=True)
        await server.serve_forever()

    asyncio.run(main())


def accepts(log: str, start: float | None = None, end: float | None = None) -> int:
    """The `accept` lines of a relay's output, those at or after START and before END when given."""
    count = 0
    for line in log.splitlines():
        word, _, stamp = line.partition(" ")
        if word != "accept":
            continue
        try:
            when = float(stamp)
        except ValueError:
            continue
        if (start is None or when >= start) and (end is None or when < end):
            count += 1
    return count


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    serve(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
