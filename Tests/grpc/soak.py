"""The soak (scripts/soak): the real sidecar for N minutes under mixed REST and gRPC load, through
a cycle of faults, judged by what an operator would check (docs/CONTRACT.md §5, §7).

The pieces, all on loopback: the Python stand-in provider (tokens of 30 s), the stand-in Fleet
Engine (gRPC and REST on one port, checking every token against its call's entity) behind a
`FaultRelay`, and `fleet-token-proxy serve` between them with `--max-entities 2000` and a
descriptor limit. Load: REST GETs over keep-alive HTTP/1.1 connections and GetVehicle through
the official Python client, about `--rate` calls a second over `--entities` vehicles.

Each fault has a window (`--window` s) and then a calm (`--window` s) in which the sidecar must
recover: the first good call of each protocol after the window, its time the fault's recovery.
Throughout: SIGHUP every 15 s with a good and a bad `--provider-header-file` in turn; every
second RSS, descriptors, CPU time, log size and /healthz.

It fails on: a wrong or expired token reaching Fleet Engine, an answer for another entity, a
call with no answer within 70 s (the 60 s answer bound and some), an error outside §5's table,
no recovery within the calm, /healthz unanswered outside the descriptor squeeze, RSS growth
past the bound, descriptors not back to their start, or a squeeze that spins (CPU or log).
"""
from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import os
import random
import resource
import signal
import socket
import socketserver
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
from google.maps import fleetengine_v1 as fe
from google.maps.fleetengine_v1.services.vehicle_service.transports import VehicleServiceGrpcTransport

from fault_relay import FaultRelay
from fleet_jwt import SigningKey
from sidecar_process import SidecarProcess, find_binary
from standin_fleet_engine import StandInFleetEngine
from standin_provider import StandInProvider

# The stand-ins' HTTP servers print a traceback for each connection reset under them: here the
# resets are the soak's own doing (its faults), and what counts is what the clients saw.
socketserver.BaseServer.handle_error = lambda self, request, client_address: None

PROVIDER = "standin-project"
CALL_TIMEOUT = 70.0  # the sidecar's 60 s answer bound (§7), and some
MIB = 1 << 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fixed_port() -> int:
    """A free port below the kernel's ephemeral range, for a server that is killed and started
    again on its address: a port in the range can be taken while it is down, by a connection to
    it that the kernel connects to itself (TCP simultaneous open from the same port)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for _ in range(200):
        port = random.randrange(max(1024, low - 12000), low)
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


def split(address: str) -> tuple[str, int]:
    host, port = address.rsplit(":", 1)
    return host, int(port)


# ------------------------------------------------------------------------------------------------
# What the clients saw
# ------------------------------------------------------------------------------------------------

# Kinds that fail the soak whenever they happen.
FATAL = ("wrong-token", "crossed", "hang", "non-contract")


class Outcomes:
    """Counts per window and kind; the time of each protocol's last good call."""

    def __init__(self):
        self.lock = threading.Lock()
        self.window = "warm-up"
        self.counts: dict[str, dict[str, int]] = {}
        self.examples: dict[str, str] = {}
        self.good_after: dict[str, float] = {}

    def note(self, protocol: str, kind: str, started: float, detail: str = "") -> None:
        now = time.monotonic()
        with self.lock:
            window = self.counts.setdefault(self.window, {})
            key = f"{protocol} {kind}"
            window[key] = window.get(key, 0) + 1
            if kind != "ok" and key not in self.examples:
                self.examples[key] = f"[{self.window}] {detail}"[:300]
            if kind == "ok":
                last = self.good_after.get(protocol)
                if last is None or started > last:
                    self.good_after[protocol] = started
                self.good_after[protocol + " done"] = now

    def first_good_since(self, protocol: str, since: float) -> float | None:
        with self.lock:
            started = self.good_after.get(protocol)
            return self.good_after.get(protocol + " done") if started is not None and started >= since else None

    def total(self, kinds: tuple[str, ...]) -> int:
        with self.lock:
            return sum(n for window in self.counts.values() for key, n in window.items() if key.split(" ", 1)[1] in kinds)


def classify_rest(status: int, body: bytes, entity: str) -> tuple[str, str]:
    if status == 200:
        try:
            name = json.loads(body).get("name", "")
        except ValueError:
            return "non-contract", f"200 with a body that is not JSON: {body[:80]!r}"
        return ("ok", "") if name.endswith("/vehicles/" + entity) else ("crossed", f"asked {entity}, got {name}")
    text = body.decode("utf-8", "replace")
    if status in (401, 403) and "stand-in Fleet Engine" in text:
        return "wrong-token", f"{status} from Fleet Engine: {text[:120]}"
    try:
        error = json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return "non-contract", f"{status} without Google's error shape: {text[:120]}"
    if (status, error.get("status")) in ((502, "UNAVAILABLE"), (503, "UNAVAILABLE"), (503, "RESOURCE_EXHAUSTED")):
        return f"contract {status}", ""
    return "non-contract", f"{status} {error.get('status')}: {error.get('message', '')[:120]}"


def classify_grpc(error: grpc.RpcError) -> tuple[str, str]:
    code, details = error.code(), error.details() or ""
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return "wrong-token", f"{code.name}: {details[:120]}"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "hang", f"no answer within {CALL_TIMEOUT:.0f} s"
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
        return f"contract {code.name}", ""
    # An answer cut after its head reached the client: the stream is reset (§5's last line).
    if code == grpc.StatusCode.INTERNAL and "RST_STREAM" in details:
        return "contract reset", ""
    return "non-contract", f"{code.name}: {details[:120]}"


# ------------------------------------------------------------------------------------------------
# Load
# ------------------------------------------------------------------------------------------------


class Load:
    def __init__(self, address: str, outcomes: Outcomes, *, rate: float, entities: int, workers: int):
        self.address = address
        self.outcomes = outcomes
        self.entities = entities
        self.interval = 2 * workers / rate  # each worker's pace: half the workers each protocol
        self.workers = workers
        self.stopping = threading.Event()
        self.squeezing = threading.Event()
        self.threads: list[threading.Thread] = []
        self.channels = [grpc.insecure_channel(address, options=[("grpc.enable_retries", 0)]) for _ in range(2)]

    def start(self) -> None:
        for i in range(self.workers):
            self.threads.append(threading.Thread(target=self._rest, name=f"rest-{i}", daemon=True))
            self.threads.append(threading.Thread(target=self._grpc, args=(self.channels[i % 2],), name=f"grpc-{i}", daemon=True))
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=CALL_TIMEOUT + 5)
        for channel in self.channels:
            channel.close()

    def _paced(self):
        next_at = time.monotonic() + random.random() * self.interval
        while not self.stopping.is_set():
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at = max(next_at + self.interval, time.monotonic() - 1)
            yield f"soak-{random.randrange(self.entities)}"

    def _rest(self) -> None:
        host, port = split(self.address)
        connection: http.client.HTTPConnection | None = None
        for entity in self._paced():
            started = time.monotonic()
            try:
                if connection is None:
                    connection = http.client.HTTPConnection(host, port, timeout=CALL_TIMEOUT)
                    connection.connect()
                connection.request("GET", f"/v1/providers/{PROVIDER}/vehicles/{entity}")
                answer = connection.getresponse()
                body = answer.read()
                kind, detail = classify_rest(answer.status, body, entity)
                if answer.will_close:
                    connection.close()
                    connection = None
            except TimeoutError:
                kind, detail = "hang", f"no answer within {CALL_TIMEOUT:.0f} s"
                connection = self._drop(connection)
            except ConnectionRefusedError as error:
                kind, detail = ("contract squeezed" if self.squeezing.is_set() else "non-contract"), f"connect: {error}"
                connection = self._drop(connection)
            except (http.client.HTTPException, ConnectionError, OSError) as error:
                # The connection closed under the call: an answer cut after its head (§5), or
                # a connection the sidecar closed between calls (the client retries on a new one).
                kind, detail = "contract cut", f"{type(error).__name__}: {error}"
                connection = self._drop(connection)
            self.outcomes.note("rest", kind, started, detail)

    @staticmethod
    def _drop(connection: http.client.HTTPConnection | None) -> None:
        if connection is not None:
            connection.close()
        return None

    def _grpc(self, channel: grpc.Channel) -> None:
        client = fe.VehicleServiceClient(transport=VehicleServiceGrpcTransport(channel=channel))
        for entity in self._paced():
            started = time.monotonic()
            name = f"providers/{PROVIDER}/vehicles/{entity}"
            try:
                answer = client.get_vehicle(request={"name": name}, retry=None, timeout=CALL_TIMEOUT)
                kind, detail = ("ok", "") if answer.name == name else ("crossed", f"asked {name}, got {answer.name}")
            except grpc.RpcError as error:
                kind, detail = classify_grpc(error)
            except Exception as error:  # the client library's own wrapping of a status
                code = getattr(error, "grpc_status_code", None)
                kind, detail = ("non-contract", f"{type(error).__name__}: {error}") if code is None else classify_grpc(_Status(code, str(error)))
            self.outcomes.note("grpc", kind, started, detail)


@dataclasses.dataclass
class _Status(grpc.RpcError):
    status: grpc.StatusCode
    text: str

    def code(self):
        return self.status

    def details(self):
        return self.text


# ------------------------------------------------------------------------------------------------
# The sidecar, watched
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Sample:
    at: float
    rss: int
    anon: int
    fds: int
    cpu: float
    log_bytes: int
    healthy: bool


class Watch:
    def __init__(self, sidecar: SidecarProcess, admin: str, log_path: Path):
        self.pid = sidecar.process.pid
        self.admin = admin
        self.log_path = log_path
        self.samples: list[Sample] = []
        self.unhealthy: list[str] = []
        self.stopping = threading.Event()
        self.squeezing = threading.Event()
        self.thread = threading.Thread(target=self._run, name="watch", daemon=True)

    def sample(self) -> Sample:
        status = Path(f"/proc/{self.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        kib = lambda name: int(fields[name].split()[0]) * 1024  # noqa: E731
        stat = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return Sample(time.monotonic(), kib("VmRSS"), kib("RssAnon"), len(os.listdir(f"/proc/{self.pid}/fd")),
                      (int(stat[11]) + int(stat[12])) / ticks, self.log_path.stat().st_size, self._healthy())

    def _healthy(self) -> bool:
        host, port = split(self.admin)
        try:
            connection = http.client.HTTPConnection(host, port, timeout=3)
            connection.request("GET", "/healthz")
            ok = connection.getresponse().status == 200
            connection.close()
            return ok
        except OSError:
            return False

    def _run(self) -> None:
        while not self.stopping.wait(1.0):
            try:
                sample = self.sample()
            except (OSError, KeyError, ValueError):
                return  # the sidecar is gone: the soak's end says so
            self.samples.append(sample)
            if not sample.healthy and not self.squeezing.is_set():
                self.unhealthy.append(f"/healthz unanswered at {sample.at:.0f}")

    def descriptor_kinds(self, ports: dict[int, str]) -> dict[str, int]:
        """The sidecar's descriptors by what they are: a socket by the loopback port it talks to
        or listens on (`ports` names them), else the kind of file."""
        inodes: dict[str, tuple[int, int]] = {}
        for table in ("tcp", "tcp6"):
            try:
                lines = Path(f"/proc/{self.pid}/net/{table}").read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                local, remote, inode = int(fields[1].rsplit(":", 1)[1], 16), int(fields[2].rsplit(":", 1)[1], 16), fields[9]
                inodes[inode] = (local, remote)
        kinds: dict[str, int] = {}
        for fd in os.listdir(f"/proc/{self.pid}/fd"):
            try:
                target = os.readlink(f"/proc/{self.pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                local, remote = inodes.get(target[8:-1], (0, 0))
                kind = (f"to {ports[remote]}" if remote in ports else f"from a client of {ports[local]}" if local in ports and remote
                        else f"listening: {ports[local]}" if local in ports else "socket (other)")
            else:
                kind = target.split(":", 1)[0] if ":" in target else ("file" if target.startswith("/") else target)
            kinds[kind] = kinds.get(kind, 0) + 1
        return kinds

    def metric_lines(self, prefix: str) -> list[str]:
        host, port = split(self.admin)
        connection = http.client.HTTPConnection(host, port, timeout=5)
        connection.request("GET", "/metrics")
        text = connection.getresponse().read().decode()
        connection.close()
        return [line for line in text.splitlines() if line.startswith(prefix)]


# ------------------------------------------------------------------------------------------------
# Faults
# ------------------------------------------------------------------------------------------------


class Rig:
    """The stand-ins, the relay and the sidecar, and the faults that act on them."""

    def __init__(self, args, work: Path):
        self.args = args
        self.work = work
        key = SigningKey.generate()
        self.keys = [(key.kid, key.public_key)]
        self.provider_port = fixed_port()
        self.provider = StandInProvider(key, lifetime=args.token_lifetime).start(self.provider_port)
        self.engine_listen = f"127.0.0.1:{fixed_port()}"
        self.engine = self._engine()
        self.relay = FaultRelay(split(self.engine_listen))
        self.headers = work / "provider-headers"
        self._write_headers(good=True)
        self.admin = f"127.0.0.1:{free_port()}"
        self.log_path = work / "sidecar.log"
        self.sidecar = SidecarProcess(
            find_binary(), upstream=f"http://{self.relay.address}", provider_url=self.provider.url_template, log_path=self.log_path,
            extra_args=("--max-entities", str(args.max_entities), "--admin-listen", self.admin, "--provider-timeout", "2",
                        "--provider-header-file", str(self.headers), "--upstream-idle-timeout", "5"),
            descriptor_limit=args.descriptor_limit).start()
        self.hangups = threading.Event()
        self.hups = 0
        self.squeeze: list[socket.socket] = []

    def _engine(self) -> StandInFleetEngine:
        engine = StandInFleetEngine(self.keys, rest=True, listen=self.engine_listen).start()
        engine.on_record = lambda record: None
        return engine

    def forget_records(self) -> None:
        """The stand-in keeps every call's record; a soak of hours must not."""
        with self.engine._lock:
            self.engine._records.clear()

    def _write_headers(self, *, good: bool) -> None:
        text = "X-Soak-Tenant: soak\n" if good else "this line is not a header\n"
        fd = os.open(self.headers, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)

    def sighups(self, stopping: threading.Event) -> None:
        """Every 15 s a SIGHUP, the header file bad and good in turn (a bad one keeps the
        previous headers: docs/CONTRACT.md §6)."""
        good = False
        while not stopping.wait(15):
            self._write_headers(good=good)
            self.sidecar.process.send_signal(signal.SIGHUP)
            self.hups += 1
            good = not good

    def faults(self):
        """(name, begin, end) for each fault, in the order they are cycled."""
        provider = self.provider
        return [
            # Through `self.engine` at each turn: a restart makes a new stand-in.
            ("upstream killed and restarted", lambda: self.engine.stop(), self._engine_back),
            ("upstream black-holed", lambda: self.relay.set_mode("blackhole"), self.relay.restore),
            ("upstream connections reset", lambda: self.relay.set_mode("reset"), self.relay.restore),
            ("hostile HTTP/2 upstream (DATA on stream 0)", lambda: self.relay.set_mode("hostile_h2"), self.relay.restore),
            ("provider answers 503", lambda: setattr(provider, "status", 503), provider.reset),
            ("provider slower than --provider-timeout", lambda: setattr(provider, "delay", 3.0), provider.reset),
            ("provider answers garbage", lambda: setattr(provider, "answer", "garbage"), provider.reset),
            ("provider killed and restarted", provider.stop, lambda: provider.start(self.provider_port)),
            ("clients hang up mid-call", self._hangups_begin, self.hangups.clear),
            ("connection burst", self._burst, lambda: None),
            ("descriptor squeeze", self._squeeze_begin, self._squeeze_end),
        ]

    def _engine_back(self) -> None:
        self.engine = self._engine()

    def _hangups_begin(self) -> None:
        self.hangups.set()
        threading.Thread(target=self._hang_up, name="hangups", daemon=True).start()

    def _hang_up(self) -> None:
        """Half a request then gone; a whole one then gone before the answer; a gRPC call
        cancelled by a deadline shorter than its token fetch."""
        host, port = split(self.sidecar.address)
        channel = grpc.insecure_channel(self.sidecar.address)
        client = fe.VehicleServiceClient(transport=VehicleServiceGrpcTransport(channel=channel))
        n = 0
        while self.hangups.is_set():
            n += 1
            try:
                with socket.create_connection((host, port), timeout=5) as s:
                    path = f"/v1/providers/{PROVIDER}/vehicles/hangup-{n}"
                    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode() if n % 2 else f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                client.get_vehicle(request={"name": f"providers/{PROVIDER}/vehicles/hangup-{n}"}, retry=None, timeout=0.001)
            except Exception:
                pass
            time.sleep(0.02)
        channel.close()

    def _burst(self) -> None:
        """300 connections at once, one call each."""
        host, port = split(self.sidecar.address)
        request = f"GET /v1/providers/{PROVIDER}/vehicles/burst HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
        sockets = []
        for _ in range(300):
            try:
                s = socket.create_connection((host, port), timeout=10)
                s.sendall(request)
                sockets.append(s)
            except OSError:
                pass
        for s in sockets:
            try:
                s.recv(4096)
            except OSError:
                pass
            s.close()

    def _squeeze_begin(self) -> None:
        """More idle connections than the sidecar has descriptors for."""
        host, port = split(self.sidecar.address)
        for _ in range(self.args.descriptor_limit + 100):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect((host, port))
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                continue
            self.squeeze.append(s)

    def _squeeze_end(self) -> None:
        for s in self.squeeze:
            s.close()
        self.squeeze.clear()

    def close(self) -> None:
        self.hangups.clear()
        self._squeeze_end()
        self.sidecar.stop()
        self.relay.close()
        self.engine.stop()
        self.provider.stop()


# ------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------


def quarters(samples: list[Sample], value) -> list[float]:
    """The value at the start, each quarter and the end of the run."""
    if not samples:
        return []
    return [value(samples[min(len(samples) - 1, round(i * (len(samples) - 1) / 4))]) for i in range(5)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=2)
    parser.add_argument("--rate", type=float, default=140, help="calls a second, REST and gRPC together")
    parser.add_argument("--entities", type=int, default=4400)
    parser.add_argument("--max-entities", type=int, default=2000)
    parser.add_argument("--token-lifetime", type=int, default=30)
    parser.add_argument("--window", type=float, default=5, help="seconds of each fault, and of the calm after it")
    parser.add_argument("--workers", type=int, default=8, help="threads per protocol")
    parser.add_argument("--descriptor-limit", type=int, default=1024)
    parser.add_argument("--rss-growth-mib", type=float, default=8)
    parser.add_argument("--report", type=Path, help="write the figures here as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (the sidecar's log)")
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    work = Path(tempfile.mkdtemp(prefix="fleet-token-proxy-soak."))
    rig = Rig(args, work)
    outcomes = Outcomes()
    watch = Watch(rig.sidecar, rig.admin, rig.log_path)
    idle_start = watch.sample()
    ports = {split(rig.relay.address)[1]: "the upstream", rig.provider_port: "the provider",
             split(rig.sidecar.address)[1]: "the sidecar", split(rig.admin)[1]: "the admin listener"}
    fd_kinds_start = watch.descriptor_kinds(ports)
    watch.thread.start()
    load = Load(rig.sidecar.address, outcomes, rate=args.rate, entities=args.entities, workers=args.workers)
    failures: list[str] = []
    faults: list[dict] = []
    began = time.monotonic()
    deadline = began + args.minutes * 60
    print(f"soak: {args.minutes:g} min, ~{args.rate:g} calls/s over {args.entities} vehicles, sidecar pid {rig.sidecar.process.pid}, log {rig.log_path}", flush=True)
    try:
        load.start()
        hups = threading.Thread(target=rig.sighups, args=(load.stopping,), name="sighup", daemon=True)
        hups.start()
        time.sleep(min(8, args.minutes * 6))
        cycle = rig.faults()
        index = 0
        # Every fault once, however short the run; then round again while a whole one fits.
        while index < len(cycle) or time.monotonic() + 2 * args.window <= deadline:
            name, begin, end = cycle[index % len(cycle)]
            index += 1
            with outcomes.lock:
                outcomes.window = name
            before = watch.sample()
            squeeze = name == "descriptor squeeze"
            if squeeze:
                watch.squeezing.set()
                load.squeezing.set()
            try:
                begin()
                time.sleep(args.window)
                during = watch.sample()
                end()
            except Exception as error:  # the soak's own fault step failed: say so and stop
                failures.append(f"{name}: the soak could not inject or end the fault: {type(error).__name__}: {error}")
                deadline = time.monotonic()
                break
            ended = time.monotonic()
            # The calm: each protocol's first good call that began after the fault ended.
            recovered: dict[str, float | None] = {}
            while time.monotonic() < ended + args.window:
                for protocol in ("rest", "grpc"):
                    if recovered.get(protocol) is None:
                        done = outcomes.first_good_since(protocol, ended)
                        recovered[protocol] = None if done is None else done - ended
                if all(v is not None for v in recovered.values()) and len(recovered) == 2:
                    break
                time.sleep(0.05)
            time.sleep(max(0.0, ended + args.window - time.monotonic()))
            watch.squeezing.clear()
            load.squeezing.clear()
            after = watch.sample()
            with outcomes.lock:
                counts = dict(outcomes.counts.get(name, {}))
                outcomes.window = "calm"
            recovery = max(v for v in recovered.values()) if len(recovered) == 2 and None not in recovered.values() else None
            fault = dict(name=name, counts=counts, recovery_s=recovery, fds_before=before.fds, fds_after=after.fds,
                         cpu_s=round(during.cpu - before.cpu, 2), log_bytes=during.log_bytes - before.log_bytes)
            faults.append(fault)
            if recovery is None:
                failures.append(f"{name}: no good call of each protocol within {args.window:g} s after it ended ({recovered})")
            if squeeze and fault["cpu_s"] > 0.6 * args.window:
                failures.append(f"{name}: {fault['cpu_s']} CPU seconds in {args.window:g} s: the accept loop spins")
            if squeeze and fault["log_bytes"] > 100_000:
                failures.append(f"{name}: {fault['log_bytes']} bytes of log in {args.window:g} s")
            rig.forget_records()
            print(f"  {name:46} recovery {'-' if recovery is None else f'{recovery:.2f} s':>8}  fds {before.fds}->{after.fds}  "
                  f"cpu {fault['cpu_s']:.2f} s  log {fault['log_bytes']} B  {counts}", flush=True)
        while time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        load.stop()
        hups.join()
        # With the load stopped, idle upstream connections close after 5 s
        # (`--upstream-idle-timeout`, one kept warm): descriptors must come back to where they
        # were at the start, but for the provider's pool, which the last refreshes ahead still
        # use (an entity used in the last token lifetime is refreshed once more) and which
        # closes its connections 60 s after that; it is bounded by `--provider-concurrency`.
        stopped = time.monotonic()
        back_after = None
        while rig.sidecar.running and time.monotonic() < stopped + 20:
            kinds = watch.descriptor_kinds(ports)
            if sum(n for kind, n in kinds.items() if kind != "to the provider") <= idle_start.fds + 1:
                back_after = time.monotonic() - stopped
                break
            time.sleep(0.5)
        watch.stopping.set()
        watch.thread.join()
        alive = rig.sidecar.running
        idle_end = watch.sample() if alive else None
        fd_kinds_end = watch.descriptor_kinds(ports) if alive else {}
        metrics = watch.metric_lines("fleet_token_proxy_requests_total") if alive else []
        rig.close()

    samples = watch.samples
    loaded = [s for s in samples if s.at < deadline]
    if not alive:
        failures.append("the sidecar exited")
    for kind in FATAL:
        n = outcomes.total((kind,))
        if n:
            examples = [v for k, v in outcomes.examples.items() if k.endswith(" " + kind)]
            failures.append(f"{n} calls: {kind} (e.g. {examples[:2]})")
    failures += watch.unhealthy[:5]
    rss_growth = 0.0
    if len(loaded) >= 10:
        tenth = max(1, len(loaded) // 10)
        early = statistics.median(s.rss for s in loaded[2 * tenth:3 * tenth])
        late = statistics.median(s.rss for s in loaded[-tenth:])
        rss_growth = (late - early) / MIB
        if rss_growth > args.rss_growth_mib:
            failures.append(f"RSS grew {rss_growth:.1f} MiB under steady load (bound {args.rss_growth_mib:g} MiB)")
    provider_connections = fd_kinds_end.get("to the provider", 0)
    if idle_end is not None and (back_after is None or provider_connections > 32):
        failures.append(f"descriptors {idle_start.fds} at start, {idle_end.fds} idle at the end: a leak "
                        f"(at start {fd_kinds_start}, at the end {fd_kinds_end})")

    totals: dict[str, int] = {}
    for window in outcomes.counts.values():
        for key, n in window.items():
            totals[key] = totals.get(key, 0) + n
    # The metrics say what the clients saw: every failure a client of the load saw is counted
    # under the status it received (more may be: the faults' own hung-up calls).
    counted = {}
    for line in metrics:
        labels, value = line.rsplit(" ", 1)
        counted[labels[labels.index("{"):]] = float(value)
    for seen, series in (("rest contract 502", '{protocol="http1",code="502"}'), ("rest contract 503", '{protocol="http1",code="503"}'),
                         ("grpc contract UNAVAILABLE", '{protocol="grpc",code="14"}'), ("grpc ok", '{protocol="grpc",code="0"}'),
                         ("rest ok", '{protocol="http1",code="200"}')):
        if alive and counted.get(series, 0) < totals.get(seen, 0):
            failures.append(f"clients saw {totals.get(seen, 0)} calls '{seen}', the metrics count {counted.get(series, 0):.0f} {series}")
    report = dict(
        minutes=args.minutes, rate=args.rate, entities=args.entities, faults=faults, totals=totals,
        rss_mib=[round(v / MIB, 1) for v in quarters(loaded, lambda s: s.rss)],
        anon_mib=[round(v / MIB, 1) for v in quarters(loaded, lambda s: s.anon)],
        fds=quarters(loaded, lambda s: s.fds), fds_idle=[idle_start.fds, idle_end.fds if idle_end else None],
        fd_kinds_idle=[fd_kinds_start, fd_kinds_end], fds_back_after_s=None if back_after is None else round(back_after, 1),
        cpu_s=round(samples[-1].cpu - idle_start.cpu, 1) if samples else None, rss_growth_mib=round(rss_growth, 2),
        sighups=rig.hups, metrics=metrics, failures=failures, examples=outcomes.examples)
    if args.report:
        args.report.write_text(json.dumps(report, indent=2))
    print(f"calls by kind: {json.dumps(totals, sort_keys=True)}")
    print(f"RSS MiB (start, quarters, end): {report['rss_mib']} (anonymous {report['anon_mib']}); growth {rss_growth:.2f} MiB")
    print(f"descriptors under load: {report['fds']}; idle at start and end: {report['fds_idle']} "
          f"(back {report['fds_back_after_s']} s after the load stopped); CPU {report['cpu_s']} s")
    for line in metrics:
        print(f"  {line}")
    if not args.keep and not failures:
        for path in work.iterdir():
            path.unlink()
        work.rmdir()
    if failures:
        print("soak FAILED:\n  " + "\n  ".join(failures) + f"\n(the sidecar's log: {rig.log_path})")
        return 1
    print("soak passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
