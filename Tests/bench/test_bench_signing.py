"""The signing mode (benchstats.signing): warm calls with every token cached and while a cold walk
makes the sidecar sign its tokens, from a `scripts/bench signing` run (fixtures/README.md)."""
from __future__ import annotations

import gzip
import shutil

import pytest
from bench_fixtures import FIXTURES, fixture_text

from benchstats import h2load, signing, targets, wrk
from benchstats.__main__ import report as print_report
from benchstats.results import ResultsDir

# signing-walk.txt: 500 vehicles from 1795524372654794 us for 338827 us.
WALK_START_US = 1795524372654794
WALK_END_US = WALK_START_US + 338827


def logged(name: str) -> list[h2load.LoggedRequest]:
    return list(h2load.logged_requests(fixture_text(name).splitlines()))


def test_the_walk_line_has_its_start_on_the_wall_clock():
    walk = wrk.parse_walk(fixture_text("signing-walk.txt"))
    assert walk == wrk.Walk(answers=564, duration_us=338827, failed=0, started_us=WALK_START_US)
    assert signing.walk_window(walk) == (WALK_START_US, WALK_END_US)


def test_a_walk_line_without_its_start_has_no_window():
    walk = wrk.parse_walk(fixture_text("walk-cold.txt"))
    assert walk is not None and walk.started_us is None
    assert signing.walk_window(walk) is None


def test_logged_requests_in_order_and_skipping_what_is_not_one():
    requests = logged("signing-during.log")
    assert len(requests) == 100
    assert all(request.status == 200 for request in requests)
    assert list(h2load.logged_requests(["1\t200\t30", "", "2\t-1", "3\t-1\t0\n"])) == [
        h2load.LoggedRequest(1, 200, 30), h2load.LoggedRequest(3, -1, 0)]


def test_warm_calls_of_the_walks_window_only():
    # The slice began before the walk's first request and went on after its last answer: 36 of
    # its 100 calls started in between. Nearest rank: the 18th and the 36th of them.
    during = signing.warm_calls(logged("signing-during.log"), (WALK_START_US, WALK_END_US))
    assert (during.calls, during.failed) == (36, 0)
    assert (during.percentile_us(50), during.percentile_us(99)) == (1038, 5504)
    assert signing.warm_calls(logged("signing-during.log")).calls == 100


def test_a_warm_call_not_answered_200_failed():
    requests = [h2load.LoggedRequest(10, 200, 500), h2load.LoggedRequest(11, 503, 90),
                h2load.LoggedRequest(12, -1, 0), h2load.LoggedRequest(30, 500, 1)]
    calls = signing.warm_calls(requests, (10, 20))
    assert (calls.calls, calls.failed, calls.answer_times_us) == (3, 2, [500])


@pytest.fixture
def run(tmp_path):
    """The run's results directory, as scripts/bench signing left it."""
    files = {"signing-walk.txt": "walk-signing.txt", "signing-walk-warmup.txt": "walk-signing-warmup.txt",
             "signing-metrics-before.txt": "metrics-signing-before.txt",
             "signing-metrics-after.txt": "metrics-signing-after.txt",
             "signing-stat-before.txt": "stat-signing-before.txt", "signing-stat-after.txt": "stat-signing-after.txt",
             "signing-cached-1.txt": "h2load-cached-1.txt", "signing-cached-2.txt": "h2load-cached-2.txt",
             "signing-during.txt": "h2load-signing-1.txt"}
    for fixture, name in files.items():
        shutil.copyfile(FIXTURES / fixture, tmp_path / name)
    for fixture, name in (("signing-cached-1.log", "h2load-cached-1.log.gz"), ("signing-cached-2.log", "h2load-cached-2.log.gz"),
                          ("signing-during.log", "h2load-signing-1.log.gz")):
        with gzip.open(tmp_path / name, "wb") as out:
            out.write((FIXTURES / fixture).read_bytes())
    (tmp_path / "settings.env").write_text(
        "MODE=signing\nSIGN_ENTITIES=500\nSIGN_CONNECTIONS=64\nWARM_ENTITIES=16\nWARM_CLIENTS=4\nWARM_RPS=25\n"
        "CACHED_S=2\nSLICE_S=1\nCLK_TCK=100\nNPROC=2\nFINISHED=2026-11-24T12:46:13Z\n")
    (tmp_path / "status.tsv").write_text("")
    return tmp_path


def test_the_report_reads_the_run(run):
    report = signing.SigningReport(ResultsDir(run))
    values = report.quantities()
    # Both cached slices: 200 calls, the 100th and the 198th.
    assert (values["cached.calls"], values["cached.p50"], values["cached.p99"]) == (200, 1110, 3679)
    assert (values["signing.calls"], values["signing.p50"], values["signing.p99"]) == (36, 1038, 5504)
    assert (values["walk.ms"], values["walk.rate"]) == (339, 1476)
    assert report.signed() == 500  # 516 cache misses after, 16 before (the warm vehicles)
    assert report.sidecar_cpu_s() == 0.40  # 4 + 0 ticks before, 41 + 3 after, at 100 Hz
    verdicts = {v.label: v for v in report.verdicts()}
    target = verdicts["warm p99 while 500 cold are signed/all cached"]
    assert (target.now, target.target, target.met) == ("1.50x", "<= 2.00x", "yes")
    assert verdicts["cold entities signed per second"].now == "1476"
    assert report.failures() == []


def test_the_table_and_its_file(run, capsys):
    assert print_report(str(run)) == 0
    table = capsys.readouterr().out
    assert (run / "summary.txt").read_text() == table
    assert "while 500 cold are signed                     36       0     1.04     5.50" in table
    assert "cold walk: 500 vehicles in 339 ms (1476/s), 0 failed; 500 tokens signed (cache misses)" in table


def test_a_target_not_met_is_not_a_failure(run):
    # Every warm call during the walk ten times slower.
    slow = "".join(f"{r.start_us}\t{r.status}\t{r.duration_us * 10}\n" for r in logged("signing-during.log"))
    with gzip.open(run / "h2load-signing-1.log.gz", "wt") as out:
        out.write(slow)
    report = signing.SigningReport(ResultsDir(run))
    target = next(v for v in report.verdicts() if v.label.startswith("warm p99 while"))
    assert (target.now, target.met) == ("14.96x", "no")
    assert report.failures() == []


def test_what_fails_the_run(run):
    (run / "walk-signing.txt").write_text("walk: requests=564 duration_us=338827 failed=3 started_us=1\n")
    (run / "metrics-signing-after.txt").write_text("fleet_token_proxy_token_cache_misses_total 400\n")
    (run / "walk-signing-warmup.txt").write_text("Running 5m test @ http://127.0.0.1:1\n")
    report = signing.SigningReport(ResultsDir(run))
    assert report.failures() == [
        "the warm vehicles' walk did not finish",
        "the cold walk: 3 calls failed",
        "384 tokens signed during the walk, want 500",
        "warm calls, while signing: none answered",
    ]


def test_a_walk_without_its_start_or_unfinished_fails(run):
    (run / "walk-signing.txt").write_text("walk: requests=564 duration_us=338827 failed=0\n")
    report = signing.SigningReport(ResultsDir(run))
    assert "the cold walk's line has no start time (an older scripts/bench-entities.lua)" in report.failures()
    assert report.quantities()["signing.p99"] is None
    (run / "walk-signing.txt").write_text("Running 5m test @ http://127.0.0.1:1\n")
    assert "the cold walk did not finish" in signing.SigningReport(ResultsDir(run)).failures()


def test_servers_that_did_not_start_fail_the_run(tmp_path, capsys):
    (tmp_path / "settings.env").write_text("MODE=signing\nSIGN_ENTITIES=500\n")
    (tmp_path / "status.tsv").write_text("signing\tthe sidecar did not answer 200 through the stand-in Fleet Engine: x\n")
    assert print_report(str(tmp_path)) == 1
    assert "status: signing: the sidecar did not answer 200" in capsys.readouterr().out


def test_the_signing_lines_belong_to_the_signing_table_only():
    line = next(entry for entry in targets.load() if entry.get("when") == "signing" and "comparison" in entry)
    assert (line["issue"], line["comparison"], line["threshold"]) == (18, "<=", 2.0)
    assert targets.applies(line, rest_h2=True, h2=True, mode="signing")
    assert not targets.applies(line, rest_h2=True, h2=True)
    assert not targets.applies(line, rest_h2=True, h2=True, mode="remote")
    loopback = next(entry for entry in targets.load() if "when" not in entry)
    assert not targets.applies(loopback, rest_h2=True, h2=True, mode="signing")
