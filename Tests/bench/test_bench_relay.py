"""The remote mode's delay relay (benchstats.relay): its delay line on a real event loop, and the
relay itself between real loopback sockets (a relay process in front of an echo server)."""
from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
from bench_fixtures import ROOT

from benchstats import relay

DELAY_MS = 40
# Loopback and a busy 2-core machine: a round trip may run late, never early.
LATE_MS = 40


def test_delay_line_keeps_order_and_runs_delays_side_by_side():
    async def run():
        loop = asyncio.get_running_loop()
        arrivals, delivered = {}, []
        line = relay.DelayLine(loop, DELAY_MS / 1000, lambda chunk: delivered.append((chunk, loop.time())))
        for index in range(10):
            chunk = bytes([index])
            arrivals[chunk] = loop.time()
            line.push(chunk)
            await asyncio.sleep(0.005)
        await asyncio.sleep(DELAY_MS / 1000 + 0.05)
        return arrivals, delivered

    arrivals, delivered = asyncio.run(run())
    assert [chunk for chunk, _ in delivered] == [bytes([index]) for index in range(10)]
    for chunk, when in delivered:
        waited_ms = (when - arrivals[chunk]) * 1000
        # Each chunk waits its own delay: ten chunks 5 ms apart are not 10 x DELAY late.
        assert DELAY_MS - 1 <= waited_ms <= DELAY_MS + LATE_MS


def test_delay_line_holds_chunks_until_the_handshake_round_trip():
    async def run():
        loop = asyncio.get_running_loop()
        start = loop.time()
        delivered = []
        line = relay.DelayLine(loop, DELAY_MS / 1000, lambda chunk: delivered.append(loop.time() - start),
                               not_before=start + 3 * DELAY_MS / 1000)
        line.push(b"hello")
        await asyncio.sleep(4 * DELAY_MS / 1000)
        return delivered

    (waited,) = asyncio.run(run())
    assert 3 * DELAY_MS / 1000 - 0.001 <= waited <= (3 * DELAY_MS + LATE_MS) / 1000


def test_accepts_counts_the_lines_in_a_window():
    log = "listening 4000\naccept 100.5\naccept 101.0\nnoise\naccept 102.25\naccept oops\n"
    assert relay.accepts(log) == 3
    assert relay.accepts(log, 101.0, 102.25) == 1
    assert relay.accepts(log, start=100.6) == 2
    assert relay.accepts("") == 0


@pytest.fixture
def echo_port():
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except socket.timeout:
                continue
            threading.Thread(target=echo, args=(connection,), daemon=True).start()

    def echo(connection):
        with connection:
            while chunk := connection.recv(65536):
                connection.sendall(chunk)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


@pytest.fixture
def relay_port(echo_port):
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "scripts"))
    process = subprocess.Popen([sys.executable, "-m", "benchstats.relay", "0", str(echo_port), str(DELAY_MS)],
                               stdout=subprocess.PIPE, text=True, env=environment)
    try:
        word, port = process.stdout.readline().split()
        assert word == "listening"
        yield int(port)
    finally:
        process.terminate()
        process.wait(5)


def receive(connection: socket.socket, count: int) -> bytes:
    received = bytearray()
    while len(received) < count:
        chunk = connection.recv(count - len(received))
        assert chunk, "the relay closed the connection early"
        received += chunk
    return bytes(received)


def test_a_round_trip_through_the_relay_takes_twice_the_delay(relay_port):
    with socket.create_connection(("127.0.0.1", relay_port), timeout=5) as connection:
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.monotonic()
        connection.sendall(b"x")
        assert receive(connection, 1) == b"x"
        # The first exchange pays the handshake's round trip too. Only its floor is checked: how
        # late the relay's first connect and the echo server's new thread run is the machine's.
        first_ms = (time.monotonic() - start) * 1000
        assert first_ms >= 4 * DELAY_MS - 1
        rtts = []
        for _ in range(3):
            start = time.monotonic()
            connection.sendall(b"y")
            assert receive(connection, 1) == b"y"
            rtts.append((time.monotonic() - start) * 1000)
        # Never early; and the quickest of three is not late by more than a busy machine's turn
        # (one late turn is noise; a relay that delayed twice would make every one 4 x DELAY).
        assert min(rtts) >= 2 * DELAY_MS - 1
        assert min(rtts) <= 2 * DELAY_MS + LATE_MS, rtts


def test_bulk_bytes_arrive_intact_and_in_order(relay_port):
    # More than a delay line holds (relay.HIGH_WATER): the relay must stop reading and go on.
    payload = os.urandom(3 * relay.HIGH_WATER)
    with socket.create_connection(("127.0.0.1", relay_port), timeout=20) as connection:
        sender = threading.Thread(target=connection.sendall, args=(payload,))
        sender.start()
        echoed = receive(connection, len(payload))
        sender.join()
    assert echoed == payload


def test_the_end_of_stream_reaches_the_other_side(relay_port):
    with socket.create_connection(("127.0.0.1", relay_port), timeout=5) as connection:
        connection.sendall(b"last words")
        connection.shutdown(socket.SHUT_WR)
        assert receive(connection, 10) == b"last words"
        # The echo server saw the EOF, closed, and that close came back.
        assert connection.recv(1) == b""
