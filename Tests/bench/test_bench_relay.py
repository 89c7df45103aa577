"""The remote mode's delay relay (scripts/benchstats/relay.c, built here as scripts/bench builds
it) between real loopback sockets: a relay process in front of an echo server; and the reader of
its log (benchstats.relay)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time

import pytest
from bench_fixtures import ROOT

from benchstats import relay

DELAY_MS = 40
# Loopback and a busy 2-core machine: a round trip may run late, never early.
LATE_MS = 40
# What one direction holds before the relay stops reading (HIGH_WATER in relay.c).
HIGH_WATER = 4 * 1024 * 1024


def test_accepts_counts_the_lines_in_a_window():
    log = "listening 4000\naccept 100.5\naccept 101.0\nnoise\naccept 102.25\naccept oops\n"
    assert relay.accepts(log) == 3
    assert relay.accepts(log, 101.0, 102.25) == 1
    assert relay.accepts(log, start=100.6) == 2
    assert relay.accepts("") == 0


@pytest.fixture(scope="module")
def relay_binary(tmp_path_factory):
    compiler = shutil.which("cc") or shutil.which("clang")
    assert compiler, "scripts/install-deps --test installs gcc: the remote benchmark builds its relay with it"
    binary = tmp_path_factory.mktemp("relay") / "relay"
    subprocess.run([compiler, "-O2", "-Wall", "-Werror", "-o", str(binary), str(ROOT / "scripts/benchstats/relay.c")],
                   check=True)
    return binary


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


class Relay:
    """A relay process; `port` is where it listens, `lines()` its output once it has stopped."""

    def __init__(self, binary, target_port: int):
        self.process = subprocess.Popen([str(binary), "0", str(target_port), str(DELAY_MS)],
                                        stdout=subprocess.PIPE, text=True)
        word, port = self.process.stdout.readline().split()
        assert word == "listening"
        self.port = int(port)

    def stop(self) -> list[str]:
        if self.process.poll() is None:
            self.process.terminate()
        out, _ = self.process.communicate(timeout=5)
        return out.splitlines()


@pytest.fixture
def relay_process(relay_binary, echo_port):
    process = Relay(relay_binary, echo_port)
    yield process
    process.stop()


@pytest.fixture
def relay_port(relay_process):
    return relay_process.port


def receive(connection: socket.socket, count: int) -> bytes:
    received = bytearray()
    while len(received) < count:
        chunk = connection.recv(count - len(received))
        assert chunk, "the relay closed the connection early"
        received += chunk
    return bytes(received)


def connect(port: int, timeout: float = 5) -> socket.socket:
    connection = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


def test_a_round_trip_through_the_relay_takes_twice_the_delay(relay_port):
    with connect(relay_port) as connection:
        start = time.monotonic()
        connection.sendall(b"x")
        assert receive(connection, 1) == b"x"
        # The first exchange pays the handshake's round trip too: the SYN's delay before the
        # relay dials, and the client's bytes wait for 3 x DELAY after the accept.
        first_ms = (time.monotonic() - start) * 1000
        assert first_ms >= 4 * DELAY_MS - 1
        rtts = []
        for _ in range(5):
            start = time.monotonic()
            connection.sendall(b"y")
            assert receive(connection, 1) == b"y"
            rtts.append((time.monotonic() - start) * 1000)
        # Never early; and the quickest of five is on time within a few milliseconds (the relay
        # stands for a network: how late it runs must not depend on the traffic). A relay that
        # delayed twice would make every one 4 x DELAY.
        assert min(rtts) >= 2 * DELAY_MS - 1
        assert min(rtts) <= 2 * DELAY_MS + 3, rtts


def test_the_delays_of_chunks_in_flight_run_side_by_side(relay_port):
    with connect(relay_port) as connection:
        connection.sendall(b"0")
        assert receive(connection, 1) == b"0"  # past the handshake
        sent = {}
        for index in range(1, 11):
            sent[index] = time.monotonic()
            connection.sendall(bytes([index]))
            time.sleep(0.005)
        waited = {}
        while len(waited) < 10:
            for byte in receive(connection, 1):
                waited[byte] = (time.monotonic() - sent[byte]) * 1000
        # In order, and each chunk waits its own round trip: ten chunks 5 ms apart are not
        # 10 x DELAY late.
        assert list(waited) == list(range(1, 11))
        for index, ms in waited.items():
            assert 2 * DELAY_MS - 1 <= ms <= 2 * DELAY_MS + LATE_MS, (index, ms)


def test_bulk_bytes_arrive_intact_and_in_order(relay_port):
    # More than a direction holds: the relay must stop reading and go on.
    payload = os.urandom(3 * HIGH_WATER)
    with connect(relay_port, timeout=20) as connection:
        sender = threading.Thread(target=connection.sendall, args=(payload,))
        sender.start()
        echoed = receive(connection, len(payload))
        sender.join()
    assert echoed == payload


def test_the_end_of_stream_reaches_the_other_side(relay_port):
    with connect(relay_port) as connection:
        connection.sendall(b"last words")
        connection.shutdown(socket.SHUT_WR)
        assert receive(connection, 10) == b"last words"
        # The echo server saw the EOF, closed, and that close came back.
        assert connection.recv(1) == b""


def test_a_target_that_refuses_closes_the_client(relay_binary):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed_port = unused.getsockname()[1]
    process = Relay(relay_binary, closed_port)
    try:
        with connect(process.port) as connection:
            connection.sendall(b"anyone?")
            try:
                assert connection.recv(1) == b""
            except ConnectionResetError:
                pass
    finally:
        process.stop()


def test_each_accepted_connection_is_logged(relay_process):
    for _ in range(2):
        with connect(relay_process.port) as connection:
            connection.sendall(b"z")
            assert receive(connection, 1) == b"z"
    lines = relay_process.stop()
    assert relay.accepts("\n".join(lines)) == 2
