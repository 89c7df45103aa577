"""The pictures of a results directory (benchstats.pictures, `scripts/bench draw`): well-formed
SVG whose bars and labels are the report's numbers, from results directories captured from real
runs (fixtures/remote-run, fixtures/loopback-run; fixtures/README.md). matplotlib comes from the
test environment (scripts/benchstats/requirements.txt, installed into .venv by scripts/test)."""
from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from bench_fixtures import FIXTURES

from benchstats.__main__ import main
from benchstats.pictures import draw
from benchstats.remote import RemoteReport
from benchstats.results import ResultsDir
from benchstats.table import Report

SVG = "{http://www.w3.org/2000/svg}"


def texts(path: Path) -> list[str]:
    """Every text of the SVG (the figure keeps its text as text), after checking it parses."""
    root = ElementTree.parse(path).getroot()
    assert root.tag == f"{SVG}svg"
    return ["".join(element.itertext()).strip() for element in root.iter(f"{SVG}text")]


def test_remote_picture(tmp_path):
    out = tmp_path / "remote.svg"
    assert main(["draw", str(FIXTURES / "remote-run"), str(out)]) == 0
    shown = texts(out)
    report = RemoteReport(ResultsDir(FIXTURES / "remote-run"))
    for heading in ("First call after 15 s idle", "Cold start: 64 calls for a new vehicle, 1 s after start",
                    "CPU per REST call (the proxy's process, every round)"):
        assert heading in shown
    for proxy in ("direct", "nginx", "haproxy h1", "haproxy h2", "sidecar"):
        assert proxy in shown
    # Each series' values are printed over its bars: the cold starts, the first calls after idle,
    # the connections a round and the CPU per call, as the table has them.
    for proxy in ("direct", "nginx", "haproxy1", "haproxy2", "sidecar"):
        assert f"{report.cold(proxy)[0]:.0f}" in shown
        assert f"{report.cpu_us_over_rounds(report.rest[proxy]):.0f}" in shown
        assert str(report.connections_per_round(proxy)) in shown
    assert f"{report.first_call('rest', 'sidecar', 15):.0f}" in shown
    assert f"{report.first_call('grpc', 'haproxy2', 15):.0f}" in shown
    assert "one round trip (20 ms)" in shown and "two round trips (40 ms)" in shown


def test_loopback_picture(tmp_path):
    out = tmp_path / "loopback.svg"
    draw(FIXTURES / "loopback-run", out)
    shown = texts(out)
    report = Report(ResultsDir(FIXTURES / "loopback-run"))
    for row in ("direct", "nginx", "haproxy", "sidecar", "gdirect", "gnginx", "ghaproxy", "gsidecar"):
        median = report.rows[row].median
        assert f"{median.requests_per_second}" in shown
        assert f"{median.cpu_us:.1f}" in shown
    # Both panels name the eight rows; a gRPC row's label is two lines (`gRPC`, then the proxy).
    assert shown.count("gRPC") == 8 and shown.count("sidecar") == 4 and shown.count("haproxy") == 4


def test_same_numbers_same_file(tmp_path):
    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    draw(FIXTURES / "remote-run", first)
    draw(FIXTURES / "remote-run", second)
    assert first.read_bytes() == second.read_bytes()


def test_no_picture_for_other_modes(tmp_path):
    (tmp_path / "settings.env").write_text("MODE=idle\n")
    with pytest.raises(ValueError, match="no picture for a `idle` run"):
        draw(tmp_path, tmp_path / "idle.svg")
    assert main(["draw", str(tmp_path), str(tmp_path / "idle.svg")]) == 1
