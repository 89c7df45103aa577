"""wrk's and h2load's output, as scripts/bench's clients printed it."""
from __future__ import annotations

import pytest
from bench_fixtures import FIXTURES, fixture_text

from benchstats import h2load, latency, wrk


@pytest.mark.parametrize("text, microseconds", [
    ("812.00us", 812), ("1.38ms", 1380), ("2.00s", 2_000_000), ("1.50m", 90_000_000), ("0.00us", 0),
])
def test_latency_units(text, microseconds):
    assert latency.microseconds(text) == pytest.approx(microseconds)


@pytest.mark.parametrize("text", ["", "12", "1.2xs", "ms"])
def test_latency_that_is_not_one(text):
    assert latency.microseconds(text) is None


def test_wrk_report():
    report = wrk.parse_report(fixture_text("wrk-sidecar.txt"))
    assert report == wrk.WrkReport(calls=18009, requests_per_second=16157, p50_us=1380, p99_us=28960, failed=0)


def test_wrk_one_connection_in_microseconds():
    report = wrk.parse_report(fixture_text("wrk-c1.txt"))
    assert (report.calls, report.p50_us, report.p99_us) == (3677, 91, 14800)


def test_wrk_non_2xx_answers_are_failed():
    report = wrk.parse_report(fixture_text("wrk-non2xx.txt"))
    assert (report.failed, report.requests_per_second, report.p99_us) == (12051, 21905, 7480)


def test_wrk_socket_errors_are_failed():
    # Every call of this run timed out: wrk counts them as socket errors, not in the latencies.
    report = wrk.parse_report(fixture_text("wrk-timeouts.txt"))
    assert (report.calls, report.failed, report.p50_us) == (16, 16, 0)


def test_wrk_that_could_not_connect():
    report = wrk.parse_report(fixture_text("wrk-refused.txt"))
    assert report == wrk.WrkReport(calls=None, requests_per_second=None, p50_us=None, p99_us=None, failed=0)


def test_walk_line():
    assert wrk.parse_walk(fixture_text("walk-many.txt")) == wrk.Walk(answers=232, duration_us=119938, failed=0)


def test_walk_that_did_not_finish():
    assert wrk.parse_walk(fixture_text("wrk-refused.txt")) is None


def test_h2load_grpc_report():
    report = h2load.parse_report(fixture_text("h2load-grpc.txt"))
    assert report == h2load.H2loadReport(elapsed_s=pytest.approx(0.0067), requests_per_second=14928, started=100,
                                         done=100, succeeded=100, failed=0, data_bytes=3400)
    assert h2load.answers_without_message(report, 34) == 0


def test_h2load_3xx_counts_as_failed_with_4xx_and_5xx():
    report = h2load.parse_report(fixture_text("h2load-3xx-5xx.txt"))
    # h2load: 10 failed (the 503s); the 20 redirects it counts as succeeded are failed here too.
    assert (report.succeeded, report.failed) == (50, 30)


def test_grpc_refusals_are_answers_without_the_message():
    # The sidecar refused every call (no token provider): trailers-only 200s, no DATA.
    report = h2load.parse_report(fixture_text("h2load-grpc-refused.txt"))
    assert (report.succeeded, report.failed, report.data_bytes) == (20, 0, 0)
    assert h2load.answers_without_message(report, 34) == 20


def test_error_bodies_do_not_hide_a_missing_message():
    # grpc nginx's 502 carries a body, so the DATA bytes cover more than the messages.
    report = h2load.parse_report(fixture_text("h2load-gnginx.txt"))
    assert report.failed == 1
    assert h2load.answers_without_message(report, 34) == 0


def test_request_log_percentiles():
    with open(FIXTURES / "h2load-rest.log") as lines:
        log = h2load.read_request_log(lines)
    assert len(log.answer_times_us) == 200
    # Nearest rank over 200 answers: the 100th and the 198th.
    assert (log.percentile_us(50), log.percentile_us(99), log.percentile_us(100)) == (143, 19332, 19337)


def test_request_log_without_failed_streams():
    with open(FIXTURES / "h2load-3xx-5xx.log") as lines:
        log = h2load.read_request_log(lines)
    # Every status is an answer, a 302 or a 503 too; only -1 (a failed stream) is left out.
    assert len(log.answer_times_us) == 60
    log = h2load.read_request_log(["1795513279965116\t-1\t0\n", "1795513279965117\t200\t40\n"])
    assert log.answer_times_us == [40]
    assert log.first_start_us == 1795513279965116


def test_a_run_that_stalled():
    # The upstream was stopped (SIGSTOP) a second into a 3 s run.
    report = h2load.parse_report(fixture_text("h2load-stalled.txt"))
    with open(FIXTURES / "h2load-stalled.log") as lines:
        log = h2load.read_request_log(lines)
    assert (report.started, report.done) == (206, 198)
    assert h2load.stalled(log, report) == 2.0


def test_a_run_that_did_not_stall():
    report = h2load.parse_report(fixture_text("h2load-grpc.txt"))
    with open(FIXTURES / "h2load-grpc.log") as lines:
        log = h2load.read_request_log(lines)
    assert h2load.stalled(log, report) is None


def test_a_run_with_no_answer():
    report = h2load.parse_report(fixture_text("h2load-unanswered.txt"))
    log = h2load.read_request_log([])
    assert (report.elapsed_s, report.started, report.done) == (2.01, 8, 0)
    assert log.percentile_us(50) is None
    assert h2load.stalled(log, report) is None
