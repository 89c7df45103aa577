"""The remote mode's own output (benchstats.remote): phases, the relays' accepts, the TLS
upstream's access log, first calls after idle and cold starts, from a `scripts/bench remote`
run (fixtures/README.md)."""
from __future__ import annotations

import pytest
from bench_fixtures import fixture_text

from benchstats import relay, remote
from benchstats.results import ResultsDir


# The slowest of remote-cold.txt's 64 answers: 0.318981 s.
COLD_LAST_MS = 319.0


def phases():
    return remote.read_phases(fixture_text("remote-phases.tsv"))


def windows(proxy: str, kind: str = "rest"):
    return [(p.start, p.end) for p in phases() if p.proxy == proxy and p.kind == kind]


def test_phases():
    read = phases()
    assert [(p.kind, p.proxy) for p in read] == [
        ("rest", "direct"), ("grpc", "direct"), ("rest", "nginx"), ("grpc", "nginx"), ("rest", "haproxy1"),
        ("rest", "haproxy2"), ("grpc", "haproxy2"), ("rest", "sidecar"), ("grpc", "sidecar")]
    assert all(p.run == 1 and p.start < p.end for p in read)
    assert read[0].start == pytest.approx(1795515640.66, abs=0.01)


def test_phases_skip_what_is_not_a_phase():
    assert remote.read_phases("rest\tsidecar\t1\t10.0\t12.5\n\nrest\tbroken\n") == [
        remote.Phase("rest", "sidecar", 1, 10.0, 12.5)]


def test_relay_accepts_in_the_sidecars_phases():
    log = fixture_text("remote-relay-sidecar.log")
    # The REST round (c=1, then c=64): a connection for each of the 64 calls in flight but one;
    # the gRPC phase: one multiplexed connection.
    assert relay.accepts(log, *windows("sidecar")[0]) == 63
    assert relay.accepts(log, *windows("sidecar", "grpc")[0]) == 1
    # The rest came with the checks, the idle calls and the cold start.
    assert relay.accepts(log) == 131


def test_handshakes_full_and_resumed_per_proxy():
    log = fixture_text("remote-upstream-access.log")
    assert remote.handshakes(log, windows("direct")) == remote.Handshakes(full=65, resumed=0)
    assert remote.handshakes(log, windows("nginx")) == remote.Handshakes(full=0, resumed=64)
    assert remote.handshakes(log, windows("haproxy2")) == remote.Handshakes(full=0, resumed=1)
    assert remote.handshakes(log, windows("sidecar")) == remote.Handshakes(full=63, resumed=0)


def test_handshakes_count_a_connection_once_at_its_first_request():
    log = ("100.100 7 1 . 200\n100.200 7 2 . 200\n100.300 8 1 r 200\n"
           "100.400 8 2 r 200\n99.000 9 1 . 200\nnot a line\n")
    assert remote.handshakes(log, [(100.0, 101.0)]) == remote.Handshakes(full=1, resumed=1)
    assert remote.handshakes(log, []) == remote.Handshakes(full=0, resumed=0)


def test_first_rest_call_after_idle():
    assert remote.first_rest_call_ms(fixture_text("remote-idle-rest.txt")) == 21.6
    assert remote.first_rest_call_ms("502 0.021\n") is None
    assert remote.first_rest_call_ms("") is None


def test_first_grpc_call_after_idle():
    summary, log = fixture_text("remote-idle-grpc.txt"), fixture_text("remote-idle-grpc.log")
    # A new upstream connection: TCP and a full TLS handshake before the call, 4 x 20 ms.
    assert remote.first_grpc_call_ms(summary, log) == 79.6
    refused = fixture_text("h2load-refused.txt")
    assert remote.first_grpc_call_ms(refused, "") is None


def test_cold_start_is_the_last_answer():
    assert remote.cold_ms(fixture_text("remote-cold.txt"), 64) == (COLD_LAST_MS, "ok")
    assert remote.cold_ms(fixture_text("remote-cold.txt"), 65) == (None, "64 of 65 calls answered 200")


def test_cold_start_with_calls_refused():
    assert remote.cold_ms(fixture_text("remote-cold-refused.txt"), 64) == (None, "0 of 64 calls answered 200")


def test_the_report_reads_the_mode_files(tmp_path):
    for name in ("remote-phases.tsv", "remote-relay-sidecar.log", "remote-upstream-access.log",
                 "remote-idle-rest.txt", "remote-idle-grpc.txt", "remote-idle-grpc.log", "remote-cold.txt"):
        target = {"remote-phases.tsv": "phases.tsv", "remote-relay-sidecar.log": "relay-sidecar.log",
                  "remote-upstream-access.log": "upstream-access.log", "remote-idle-rest.txt": "idle-rest-sidecar-5.txt",
                  "remote-idle-grpc.txt": "idle-grpc-sidecar-5.txt", "remote-idle-grpc.log": "idle-grpc-sidecar-5.log",
                  "remote-cold.txt": "cold-sidecar.txt"}[name]
        (tmp_path / target).write_text(fixture_text(name))
    (tmp_path / "settings.env").write_text("MODE=remote\nRTT_MS=20\nIDLE_S=5\nCOLD_CALLS=64\nRUNS=1\n")
    report = remote.RemoteReport(ResultsDir(tmp_path))
    values = report.quantities()
    assert values["sidecar.connections"] == 63
    assert values["sidecar.tls_full"] == 63
    assert values["sidecar.idle_worst_ms"] == 79.6
    assert values["sidecar.cold_ms"] == COLD_LAST_MS
    assert values["nginx.connections"] is None  # its relay's log is not there
    verdicts = {v.label: v for v in report.verdicts()}
    assert verdicts["first call after idle (worst of IDLE_S), ms over the RTT"].now == "59.6"
    assert verdicts["upstream connections a round, sidecar"].met == "no"
    # No wrk or h2load run: the rows say so and fail the run.
    assert "rsidecar: not run" in report.failures()



def test_relay_cpu_is_the_busiest_rest_phase(tmp_path):
    # 42 ticks (0.42 s at 100 Hz) in a 4 s phase: 10.5%, printed as 10 (%.0f rounds to even);
    # the same ticks in a 2 s phase of round 2: 21%.
    (tmp_path / "settings.env").write_text("MODE=remote\nCLK_TCK=100\n")
    (tmp_path / "phases.tsv").write_text("rest\tsidecar\t1\t100.0\t104.0\nrest\tsidecar\t2\t110.0\t112.0\n"
                                         "grpc\tsidecar\t2\t112.0\t113.0\n")
    for run in (1, 2):
        (tmp_path / f"stat-relay-sidecar-{run}-before.txt").write_text(fixture_text("stat-sidecar-before.txt"))
        (tmp_path / f"stat-relay-sidecar-{run}-after.txt").write_text(fixture_text("stat-sidecar-after.txt"))
    report = remote.RemoteReport(ResultsDir(tmp_path))
    assert report.relay_busy_percent("sidecar") == 21
    (tmp_path / "stat-relay-sidecar-2-after.txt").write_text("")
    assert report.relay_busy_percent("sidecar") == 10
    assert report.relay_busy_percent("nginx") is None


def test_cpu_per_call_is_over_every_round_weighted_by_its_calls():
    from benchstats.results import Round, RowResult

    def round_of(run, rps, cpu_us):
        return Round(run=run, requests_per_second=rps, p50_us=None, p99_us=None, failed=0, cpu_us=cpu_us, user_us=None)

    # The median round by req/s (the second) has the lowest CPU: not the figure reported.
    rounds = [round_of(1, 3000, 82.0), round_of(2, 3050, 59.0), round_of(3, 3100, 74.0)]
    row = RowResult(row="rsidecar", status="ok", median=rounds[1], failed=0, rounds=rounds)
    expected = (82.0 * 3000 + 59.0 * 3050 + 74.0 * 3100) / 9150
    assert remote.RemoteReport.cpu_us_over_rounds(row) == round(expected, 1)
    assert remote.RemoteReport.cpu_s_per_1000(row) == round(round(expected, 1) / 1000, 3)
    # A round without a CPU sample is left out; none at all gives no figure.
    row.rounds.append(round_of(4, 3000, None))
    assert remote.RemoteReport.cpu_us_over_rounds(row) == round(expected, 1)
    assert remote.RemoteReport.cpu_us_over_rounds(RowResult(row="rnginx", status="failed")) is None
