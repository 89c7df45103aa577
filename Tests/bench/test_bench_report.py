"""A results directory read back into the table, its statuses and the exit status."""
from __future__ import annotations

from bench_fixtures import results  # noqa: F401 (the fixture)

from benchstats.__main__ import main
from benchstats.results import ResultsDir
from benchstats.table import Report

ANCHORS = ["direct", "nginx", "haproxy", "direct1", "nginx1"]


def anchors_ok(results, skip_h2=True):
    for row in ANCHORS:
        results.wrk_run(row, 1, "wrk-sidecar.txt")
    if skip_h2:
        results.settings["SKIP_H2"] = "1"
    results.status("memory", "skipped (SKIP_MEMORY=1)")
    for row in ["sidecar", "sidecar1", "many1", "many", "cold"]:
        results.status(row, "skipped (SKIP_SIDECAR=1)")
    return results


def test_median_round_and_failed_over_all_rounds(results):
    anchors_ok(results)
    results.settings["RUNS"] = "3"
    results.wrk_run("sidecar", 1, "wrk-non2xx.txt").wrk_run("sidecar", 2, "wrk-sidecar.txt").wrk_run("sidecar", 3, "wrk-many.txt")
    row = ResultsDir(results.write()).row("sidecar")
    # By req/s: 14970, 16157, 21905: the median is wrk-sidecar.txt's round, with its own latencies.
    assert (row.median.run, row.median.requests_per_second, row.median.p50_us, row.median.p99_us) == (2, 16157, 1380, 28960)
    assert (row.median.cpu_us, row.median.user_us) == (23.3, 8.9)
    assert row.failed == 12051
    assert row.status == "ok"


def test_a_failed_round_leaves_the_others(results):
    results.wrk_run("sidecar", 1, "wrk-refused.txt", outcome="client-failed").wrk_run("sidecar", 2, "wrk-sidecar.txt")
    row = ResultsDir(results.write()).row("sidecar")
    assert row.median.run == 2
    assert row.status == "wrk failed: unable to connect to 127.0.0.1:1 Connection refused"


def test_server_exited(results):
    results.wrk_run("nginx", 1, "wrk-sidecar.txt", outcome="server-exited")
    directory = results.write()
    row = ResultsDir(directory).row("nginx")
    assert (row.median, row.failed) == (None, None)
    assert row.status == f"the server exited during the run (its log is in {directory})"


def test_unreadable_wrk_output(results):
    results.wrk_run("direct", 1, "wrk-refused.txt")
    assert ResultsDir(results.write()).row("direct").status == "could not read wrk's output"


def test_stalled_h2load_run_keeps_its_numbers(results):
    results.h2load_run("gsidecar", 1, "h2load-stalled")
    row = ResultsDir(results.write()).row("gsidecar")
    assert (row.median.requests_per_second, row.median.p50_us, row.median.p99_us) == (66, 120, 6604)
    # The 8 requests left unanswered (its JSON bodies outweigh the gRPC message: none short).
    assert row.failed == 8
    assert row.status == "stalled: no answer in the last 2.0s of run 1, 8 requests unanswered"


def test_h2load_run_with_no_answer(results):
    results.h2load_run("gdirect", 1, "h2load-unanswered")
    results.h2load_run("gdirect", 2, "h2load-grpc")
    row = ResultsDir(results.write()).row("gdirect")
    assert row.median.run == 2
    assert row.failed == 8
    assert row.status == "no request answered in run 1 (8 sent)"


def test_h2load_refused_connection(results):
    results.h2load_run("h2direct", 1, "h2load-refused")
    row = ResultsDir(results.write()).row("h2direct")
    assert (row.median, row.failed) == (None, None)
    assert row.status == "no request answered in run 1 (0 sent)"


def test_h2load_that_exited_non_zero(results):
    results.h2load_run("gnginx", 1, "h2load-refused", outcome="client-failed")
    row = ResultsDir(results.write()).row("gnginx")
    assert row.status == "h2load failed: req/s           :       0.00        0.00        0.00        0.00   100.00%"


def test_grpc_answers_without_the_message_are_failed(results):
    results.h2load_run("gsidecar", 1, "h2load-grpc-refused")
    row = ResultsDir(results.write()).row("gsidecar")
    assert (row.failed, row.status) == (20, "ok")


def test_rest_h2_row_with_redirects(results):
    results.h2load_run("h2sidecar", 1, "h2load-3xx-5xx")
    row = ResultsDir(results.write()).row("h2sidecar")
    assert (row.failed, row.median.p50_us) == (30, 121)


def test_cold_round(results):
    results.copy("walk-cold.txt", "walk-cold-1.txt")
    results.copy("metrics-cold-before.txt", "metrics-cold-1-before.txt").copy("metrics-cold-after.txt", "metrics-cold-1-after.txt")
    for name in ["before", "after"]:
        results.copy(f"stat-cold-{name}.txt", f"stat-cold-1-{name}.txt")
        results.copy(f"stat-cold-provider-{name}.txt", f"stat-cold-provider-1-{name}.txt")
    results.runs.append(("cold", 1, "ok"))
    row = ResultsDir(results.write()).row("cold")
    # 200 fetches in 88,512 us.
    assert (row.median.requests_per_second, row.median.walk_ms, row.failed, row.status) == (2260, 89, 0, "ok")
    assert (row.median.cpu_us, row.median.provider_cpu_us) == (150.0, 50.0)


def test_cold_round_short_of_fetches(results):
    results.settings["COLD_ENTITIES"] = "300"
    results.copy("walk-cold.txt", "walk-cold-1.txt")
    results.copy("metrics-cold-before.txt", "metrics-cold-1-before.txt").copy("metrics-cold-after.txt", "metrics-cold-1-after.txt")
    results.runs.append(("cold", 1, "ok"))
    assert ResultsDir(results.write()).row("cold").status == "run 1: 200 provider fetches, want 300"


def test_cold_walk_unfinished(results):
    results.copy("wrk-refused.txt", "walk-cold-1.txt")
    results.runs.append(("cold", 1, "walk-unfinished"))
    assert ResultsDir(results.write()).row("cold").status == "the walk of run 1 did not finish"


def test_cache_misses_during_the_rounds(results):
    results.wrk_run("many", 1, "wrk-many.txt")
    results.copy("metrics-cold-before.txt", "metrics-many-before.txt").copy("metrics-many.txt", "metrics-many-after.txt")
    assert ResultsDir(results.write()).row("many").status == "200 cache misses during the rounds"


def test_memory(results):
    for name in ["memory-idle.status", "memory-before.status", "memory-after.status", "memory-metrics.txt",
                 "memory-token.json", "walk-memory.txt"]:
        results.copy(name, name)
    memory = ResultsDir(results.write()).memory()
    # (15588 - 13524) kB over 2000 entities, less a 730-byte token.
    assert (memory.status, memory.idle_mb, memory.entity_bytes, memory.token_bytes, memory.beyond_token) == (
        "ok", 10.8, 1056, 730, 326)


def test_memory_line_splits_the_idle_resident_set(results, capsys):
    anchors_ok(results)
    results.statuses = [s for s in results.statuses if s[0] != "memory"]
    for name in ["memory-idle.status", "memory-before.status", "memory-after.status", "memory-metrics.txt",
                 "memory-token.json", "walk-memory.txt"]:
        results.copy(name, name)
    main(["report", str(results.write())])
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("memory "))
    assert line.startswith("memory             ok: idle RSS 10.8 MB (anonymous 1.5, file-backed 9.3); 2000 entities: "), line


def test_memory_with_the_wrong_entity_count(results):
    results.settings["MEMORY_ENTITIES"] = "3000"
    for name in ["memory-idle.status", "memory-metrics.txt", "memory-token.json", "walk-memory.txt"]:
        results.copy(name, name)
    memory = ResultsDir(results.write()).memory()
    assert memory.status == "2001 cached entities after the walk, want 3001"
    assert memory.idle_kb == 11032


def test_memory_not_run_and_skipped(results):
    assert ResultsDir(results.write()).memory().status == "not run"
    results.status("memory", "skipped (SKIP_MEMORY=1)")
    assert ResultsDir(results.write()).memory().status == "skipped (SKIP_MEMORY=1)"


def test_table(results, capsys):
    anchors_ok(results)
    directory = results.write()
    assert main(["report", str(directory)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "fleet-token-proxy bench, 2026-11-24T09:41:19Z"
    assert lines[1] == "host: 2 cores, Linux 6.1; nginx/1.22.1; HAProxy 2.6.12-1+deb12u4; wrk debian/4.1.0-3+b2"
    assert "gRPC (h2c)" not in out
    # A results directory from before PROXY_CREDENTIAL: the proxies set the 13-byte credential.
    assert lines[4] == "nginx and HAProxy set Authorization: Bearer static (13 bytes; a run from before PROXY_CREDENTIAL)"
    assert lines[7] == "row                     req/s    p50 us    p99 us   cpu us   usr us   failed  status"
    assert lines[8] == "direct                  16157      1380     28960     23.3      8.9        0  ok"
    assert "sidecar 200 ids             -         -         -        -        -        -  skipped (SKIP_SIDECAR=1)" in lines
    assert "memory             skipped (SKIP_MEMORY=1)" in lines
    assert "issue 10 target                                           now     target   met" in lines
    assert "HTTP/1.1 req/s, sidecar/nginx                             n/a   >= 1.30x   n/a" in lines
    assert not any(line.startswith("gRPC req/s") for line in lines)
    assert (directory / "summary.txt").read_text() == out


def test_exit_status_when_an_anchor_failed(results, capsys):
    anchors_ok(results)
    results.runs = [run for run in results.runs if run[0] != "haproxy"]
    results.status("haproxy", "HAProxy did not answer 200")
    assert main(["report", str(results.write())]) == 1
    assert "failed: haproxy: HAProxy did not answer 200" in capsys.readouterr().err


def test_exit_status_when_a_sidecar_row_failed(results, capsys):
    anchors_ok(results)
    results.status("sidecar", "the sidecar did not answer 200")
    assert main(["report", str(results.write())]) == 1


def test_a_target_not_met_is_not_a_failure(results, capsys):
    anchors_ok(results)
    results.statuses = [s for s in results.statuses if s[0] not in ("sidecar",)]
    results.wrk_run("sidecar", 1, "wrk-many.txt")
    directory = results.write()
    report = Report(ResultsDir(directory))
    assert [v.met for v in report.verdicts() if v.label == "HTTP/1.1 req/s, sidecar/nginx"] == ["no"]
    assert report.failures() == []


def test_exit_status_when_memory_was_not_run(results, capsys):
    anchors_ok(results)
    results.statuses = [s for s in results.statuses if s[0] != "memory"]
    assert main(["report", str(results.write())]) == 1


def test_grpc_rows_in_the_table(results, capsys):
    anchors_ok(results, skip_h2=False)
    for row, fixture in [("gdirect", "h2load-grpc"), ("ghaproxy", "h2load-grpc"), ("gnginx", "h2load-grpc")]:
        results.h2load_run(row, 1, fixture)
    results.status("gsidecar", "skipped (SKIP_SIDECAR=1)")
    assert main(["report", str(results.write())]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "gRPC (h2c): h2load -t1 -c10 -m10 -D 1s, POST /maps.fleetengine.v1.VehicleService/GetVehicle" in lines
    assert "grpc direct             14928       233       536        -        -        0  ok" in lines
    assert "gRPC req/s, grpc sidecar/grpc haproxy                     n/a   >= 1.20x   n/a" in lines


def test_table_names_the_credential_the_proxies_set(results, capsys):
    anchors_ok(results)
    results.settings.update(PROXY_CREDENTIAL="jwt", CREDENTIAL_BYTES="739")
    assert main(["report", str(results.write())]) == 0
    assert ("nginx and HAProxy set Authorization to a stand-in provider's JWT (739 bytes with `Bearer `), "
            "as long as the sidecar's") in capsys.readouterr().out.splitlines()
