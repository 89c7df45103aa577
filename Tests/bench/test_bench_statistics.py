"""Nearest-rank percentiles, the median round, ratios and CPU per call."""
from __future__ import annotations

import pytest
from bench_fixtures import fixture_text

from benchstats import order_statistics, procfs, prometheus


def test_nearest_rank():
    values = list(range(1, 101))
    assert order_statistics.nearest_rank(values, 50) == 50
    assert order_statistics.nearest_rank(values, 99) == 99
    assert order_statistics.nearest_rank(values, 100) == 100
    assert order_statistics.nearest_rank(values, 1) == 1


def test_nearest_rank_rounds_up():
    assert order_statistics.nearest_rank([10, 20, 30], 50) == 20
    assert order_statistics.nearest_rank(list(range(10)), 99) == 9
    assert order_statistics.nearest_rank([7], 99) == 7
    assert order_statistics.nearest_rank([], 50) is None


def test_nearest_rank_refuses_a_percent_out_of_range():
    with pytest.raises(ValueError):
        order_statistics.nearest_rank([1], 0)


def test_median_round_odd_and_even():
    assert order_statistics.median_round([30, 10, 20], key=lambda v: v) == 20
    # Even: the lower of the two middle rounds, a round that was measured.
    assert order_statistics.median_round([40, 10, 30, 20], key=lambda v: v) == 20
    assert order_statistics.median_round([], key=lambda v: v) is None


def test_median_round_keeps_order_of_equal_rounds():
    rounds = [("a", 5), ("b", 5), ("c", 1)]
    assert order_statistics.median_round(rounds, key=lambda r: r[1]) == ("a", 5)


def test_ratio():
    assert order_statistics.ratio(1, 3) == 0.33
    assert order_statistics.ratio(16157, 20613) == 0.78
    assert order_statistics.ratio(1, 0) is None
    assert order_statistics.ratio(None, 3) is None


def test_cpu_ticks_from_proc_stat():
    before = procfs.cpu_ticks(fixture_text("stat-sidecar-before.txt"))
    after = procfs.cpu_ticks(fixture_text("stat-sidecar-after.txt"))
    assert (before.user, before.system) == (1, 0)
    assert (after.user, after.system) == (17, 26)


def test_cpu_ticks_with_a_parenthesis_in_the_name():
    # The process was named "odd) name": fields are counted from the last ") ".
    ticks = procfs.cpu_ticks(fixture_text("stat-odd-name.txt"))
    assert ticks == procfs.CPUTicks(user=0, system=0)


def test_cpu_ticks_of_a_process_that_had_gone():
    assert procfs.cpu_ticks("") is None
    assert procfs.cpu_ticks("14029 (fleet-token-pro) S 12851") is None


def test_cpu_per_call():
    # 42 ticks (user + system) at 100 Hz over wrk-sidecar.txt's 18009 calls: 23.3 us a call.
    assert procfs.cpu_us_per_call(1, 43, 18009, 100) == 23.3
    assert procfs.cpu_us_per_call(1, 17, 18009, 100) == 8.9
    assert procfs.cpu_us_per_call(None, 43, 18009, 100) is None
    assert procfs.cpu_us_per_call(1, 43, 0, 100) is None


def test_rss():
    assert procfs.rss_kb(fixture_text("memory-idle.status")) == 11032
    assert procfs.rss_kb("Name:\tx\n") is None


def test_resident_parts_split_anonymous_from_file_backed():
    parts = procfs.resident_parts(fixture_text("memory-idle.status"))
    assert parts == procfs.ResidentParts(anon_kb=1524, file_kb=9508)
    assert (parts.anon_mb, parts.file_mb) == (1.5, 9.3)
    assert procfs.resident_parts("VmRSS:\t 11032 kB\nRssAnon:\t 1524 kB\n") is None


def test_metric_samples():
    metrics = fixture_text("metrics-many.txt")
    assert prometheus.sample(metrics, 'fleet_token_proxy_provider_requests_total{outcome="success"}') == 200
    assert prometheus.sample(metrics, "fleet_token_proxy_cached_entities") == 200
    # A counter that has not moved yet is not printed: 0.
    before = fixture_text("metrics-cold-before.txt")
    assert prometheus.sample(before, 'fleet_token_proxy_provider_requests_total{outcome="success"}') == 0
