"""The target lines: targets.json evaluated against the rows' quantities."""
from __future__ import annotations

import bench_fixtures  # noqa: F401 (puts scripts/ on sys.path)
from benchstats import targets

NAMES = {"ENTITIES": "10000", "cold_ideal": " (1562 ms)"}


def line(label):
    return next(entry for entry in targets.load() if entry["label"] == label)


def test_ratio_target_met_and_not():
    entry = line("HTTP/1.1 req/s, sidecar/nginx")
    assert targets.evaluate(entry, {"sidecar.rps": 30796, "nginx.rps": 34699}, NAMES) == targets.Verdict(
        "HTTP/1.1 req/s, sidecar/nginx", "0.89x", ">= 1.30x", "no")
    assert targets.evaluate(entry, {"sidecar.rps": 45200, "nginx.rps": 34699}, NAMES).met == "yes"


def test_ratio_compares_what_it_shows():
    # 1.2996 shows as 1.30x, and 1.30x meets >= 1.30x.
    entry = line("HTTP/1.1 req/s, sidecar/nginx")
    assert targets.evaluate(entry, {"sidecar.rps": 12996, "nginx.rps": 10000}, NAMES).met == "yes"


def test_unknown_measure_is_na():
    entry = line("HTTP/1.1 req/s, sidecar/haproxy")
    verdict = targets.evaluate(entry, {"sidecar.rps": 30796, "haproxy.rps": None}, NAMES)
    assert (verdict.now, verdict.met) == ("n/a", "n/a")


def test_line_for_reading_has_no_target():
    verdict = targets.evaluate(line("HTTP/1.1 req/s, sidecar/direct"), {"sidecar.rps": 30796, "direct.rps": 104585}, NAMES)
    assert verdict == targets.Verdict("HTTP/1.1 req/s, sidecar/direct", "0.29x", "", "")


def test_added_latency_against_nginx():
    entry = line("-c1 added p50 over direct, us: sidecar (nginx)")
    quantities = {"sidecar1.p50": 65, "nginx1.p50": 73, "direct1.p50": 28}
    assert targets.evaluate(entry, quantities, NAMES) == targets.Verdict(
        "-c1 added p50 over direct, us: sidecar (nginx)", "37 (45)", "<= nginx", "yes")
    quantities["sidecar1.p50"] = 91
    assert targets.evaluate(entry, quantities, NAMES).met == "no"
    quantities["direct1.p50"] = None
    assert targets.evaluate(entry, quantities, NAMES).now == "n/a (n/a)"


def test_value_targets():
    idle = targets.evaluate(line("idle RSS, MB"), {"memory.idle_mb": 10.6}, NAMES)
    assert idle == targets.Verdict("idle RSS, MB", "10.6", "<= 12", "yes")
    entity = targets.evaluate(line("bytes per entity beyond its token"), {"memory.beyond_token": 326}, NAMES)
    assert (entity.now, entity.target, entity.met) == ("326", "<= 300", "no")


def test_labels_name_the_settings():
    cold = targets.evaluate(line("cold misses, measured/ideal{cold_ideal}"), {"cold.ms": 1675, "cold.ideal_ms": 1562}, NAMES)
    assert cold == targets.Verdict("cold misses, measured/ideal (1562 ms)", "1.07x", "<= 1.20x", "yes")
    many = targets.evaluate(line("req/s, {ENTITIES} ids/1 id (same sidecar)"), {"many.rps": 33319, "many1.rps": 37694}, NAMES)
    assert (many.label, many.now, many.met) == ("req/s, 10000 ids/1 id (same sidecar)", "0.88x", "no")


def test_ceiling_uses_the_system_part():
    entry = line("HTTP/1.1 ceiling: nginx CPU/sidecar system CPU")
    assert targets.evaluate(entry, {"nginx.cpu": 28.0, "sidecar.sys": 19.9}, NAMES).now == "1.41x"


def test_every_target_names_its_issue_and_threshold():
    for entry in targets.load():
        assert entry["measure"] in ("ratio", "pair", "value")
        if "comparison" in entry:
            assert entry["comparison"] in (">=", "<=")
            assert "issue" in entry and entry["threshold"] is not None
    assert targets.issues(targets.load()) == [10, 17, 18, 27]


def test_when():
    grpc = line("gRPC req/s, grpc sidecar/grpc haproxy")
    rest = line("REST h2 req/s, h2 sidecar/h2 nginx")
    assert targets.applies(grpc, rest_h2=False, h2=True) and not targets.applies(grpc, rest_h2=False, h2=False)
    assert targets.applies(rest, rest_h2=True, h2=True) and not targets.applies(rest, rest_h2=False, h2=True)


def test_the_remote_lines_belong_to_the_remote_table_only():
    remote = line("REST c=64 req/s, sidecar/best of nginx and HAProxy")
    grpc = line("gRPC req/s, grpc sidecar/grpc haproxy")
    assert targets.applies(remote, rest_h2=True, h2=True, mode="remote")
    assert not targets.applies(remote, rest_h2=True, h2=True)
    assert not targets.applies(grpc, rest_h2=False, h2=True, mode="remote")
