"""What the tests of scripts/benchstats (the numbers of scripts/bench) share: the fixtures, output
the benchmark's tools printed on this project's development machine (fixtures/README.md says how
each was made), and results directories built from them. No server is started here.

Not a conftest.py: Tests/grpc's tests import names from their own `conftest` module, and a
second conftest.py in the same pytest run would take that module name from them."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(ROOT / "scripts"))


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(errors="replace")


class ResultsBuilder:
    """A results directory as scripts/bench leaves it, from fixture files."""

    SETTINGS = {
        "DURATION": "1s", "CONNECTIONS": "32", "THREADS": "1", "RUNS": "1", "H2_CLIENTS": "10",
        "H2_STREAMS": "10", "SKIP_H2": "0", "REST_H2": "0", "ENTITIES": "200", "COLD_ENTITIES": "200",
        "PROVIDER_DELAY_MS": "5", "PROVIDER_CONCURRENCY": "32", "COLD_CONNECTIONS": "64",
        "MEMORY_ENTITIES": "2000", "REQUEST_PATH": "/v1/providers/bench/vehicles/v1",
        "GRPC_PATH": "/maps.fleetengine.v1.VehicleService/GetVehicle", "GRPC_ANSWER_BYTES": "34",
        "SIDECAR_NOTE": "", "LOAD_BEFORE": "0.50 0.40 0.30", "CLK_TCK": "100", "NPROC": "2",
        "KERNEL": "Linux 6.1", "NGINX_VERSION": "nginx version: nginx/1.22.1",
        "HAPROXY_VERSION": "HAProxy version 2.6.12-1+deb12u4 2025/01/01 - https://haproxy.org/",
        "WRK_VERSION": "wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer",
        "H2LOAD_VERSION": "h2load nghttp2/1.52.0", "COMMIT": "abc1234", "LOAD_AFTER": "1.00 0.50 0.40",
        "FINISHED": "2026-11-24T09:41:19Z",
    }

    def __init__(self, path: Path):
        self.path = path
        self.settings = dict(self.SETTINGS)
        self.statuses: list[tuple[str, str]] = []
        self.runs: list[tuple[str, int, str]] = []

    def copy(self, fixture: str, name: str) -> "ResultsBuilder":
        shutil.copyfile(FIXTURES / fixture, self.path / name)
        return self

    def log(self, fixture: str, name: str) -> "ResultsBuilder":
        """An h2load --log-file, compressed as scripts/bench keeps it."""
        import gzip
        with gzip.open(self.path / name, "wb") as out:
            out.write((FIXTURES / fixture).read_bytes())
        return self

    def wrk_run(self, row: str, run: int, fixture: str, outcome: str = "ok") -> "ResultsBuilder":
        self.copy(fixture, f"wrk-{row}-{run}.txt")
        self.copy("stat-sidecar-before.txt", f"stat-{row}-{run}-before.txt")
        self.copy("stat-sidecar-after.txt", f"stat-{row}-{run}-after.txt")
        self.runs.append((row, run, outcome))
        return self

    def h2load_run(self, row: str, run: int, fixture: str, outcome: str = "ok") -> "ResultsBuilder":
        self.copy(f"{fixture}.txt", f"h2load-{row}-{run}.txt")
        if (FIXTURES / f"{fixture}.log").exists():
            self.log(f"{fixture}.log", f"h2load-{row}-{run}.log.gz")
        self.runs.append((row, run, outcome))
        return self

    def status(self, row: str, why: str) -> "ResultsBuilder":
        self.statuses.append((row, why))
        return self

    def write(self) -> Path:
        (self.path / "settings.env").write_text("".join(f"{k}={v}\n" for k, v in self.settings.items()))
        (self.path / "status.tsv").write_text("".join(f"{row}\t{why}\n" for row, why in self.statuses))
        (self.path / "runs.tsv").write_text("".join(f"{row}\t{run}\t{outcome}\n" for row, run, outcome in self.runs))
        return self.path


@pytest.fixture
def results(tmp_path: Path) -> ResultsBuilder:
    return ResultsBuilder(tmp_path)
