"""The checks scripts/bench makes before the rounds, and the callgrind harness's arithmetic."""
from __future__ import annotations

import pytest
from bench_fixtures import FIXTURES, fixture_text

from benchstats import callgrind, checks
from benchstats.__main__ import main


def test_warmup_ready():
    ok, message = checks.warmup(fixture_text("walk-many.txt"), fixture_text("metrics-many.txt"), 200)
    assert ok
    assert message == "warmed: 200 provider fetches, 200 cached entities, in 119 ms"


def test_warmup_short_of_entities():
    ok, message = checks.warmup(fixture_text("walk-many.txt"), fixture_text("metrics-many.txt"), 300)
    assert not ok
    assert message == "after the warm-up: 200 provider fetches and 200 cached entities, want 300"


def test_warmup_walk_unfinished():
    assert checks.warmup(fixture_text("wrk-refused.txt"), fixture_text("metrics-many.txt"), 200) == (
        False, "the warm-up walk did not finish")


def test_warmup_with_failed_calls():
    walk = "walk: requests=232 duration_us=119938 failed=3\n"
    assert checks.warmup(walk, fixture_text("metrics-many.txt"), 200) == (False, "the warm-up walk had 3 failed calls")


def test_grpc_answer_with_its_trailer():
    assert checks.grpc_answer(fixture_text("nghttp-grpc-ok.txt")) is None


def test_grpc_answer_without_a_trailer():
    # A JSON answer: a 200, a body, no grpc-status.
    assert checks.grpc_answer(fixture_text("nghttp-json.txt")) == "no grpc-status: 0 trailer after the message"


def test_grpc_refusal_is_not_an_answer():
    # Trailers-only, grpc-status 14: no DATA, no grpc-status 0.
    assert checks.grpc_answer(fixture_text("nghttp-grpc-refused.txt")) == "no grpc-status: 0 trailer after the message"


def test_grpc_answer_not_a_200():
    text = fixture_text("nghttp-grpc-ok.txt").replace(":status: 200", ":status: 503")
    assert checks.grpc_answer(text) == "the gRPC call's answer is not a 200"


def test_option_default_from_help():
    help_text = fixture_text("serve-help.txt")
    assert checks.option_default(help_text, "--provider-concurrency") == "32"
    assert checks.option_default(help_text, "--max-entities") == "100000"
    assert checks.option_default(help_text, "--no-such-option") is None


def test_callgrind_totals():
    assert callgrind.instructions(fixture_text("callgrind-h1-2000.out")) == 90279536
    assert callgrind.instructions("summary: 12\n") == 12
    assert callgrind.instructions("events: Ir\n") is None


def test_instructions_per_call():
    low = callgrind.instructions(fixture_text("callgrind-h2c-2000.out"))
    high = callgrind.instructions(fixture_text("callgrind-h2c-12000.out"))
    assert round(callgrind.per_call(low, high, 2000, 12000)) == 96567
    with pytest.raises(ValueError):
        callgrind.per_call(low, high, 2000, 2000)


def test_callgrind_command(capsys):
    f = FIXTURES
    assert main(["callgrind", "2000", str(f / "callgrind-h1-2000.out"), str(f / "h2load-callgrind-h1-2000.txt"),
                 "12000", str(f / "callgrind-h1-12000.out"), str(f / "h2load-callgrind-h1-12000.txt")]) == 0
    assert capsys.readouterr().out == "30466\n"


def test_callgrind_command_refuses_a_run_short_of_calls(capsys):
    f = FIXTURES
    assert main(["callgrind", "2000", str(f / "callgrind-h1-2000.out"), str(f / "h2load-callgrind-h1-2000.txt"),
                 "12000", str(f / "callgrind-h1-12000.out"), str(f / "h2load-callgrind-h1-2000.txt")]) == 1
    assert "2000 of 12000 calls succeeded" in capsys.readouterr().err


def test_callgrind_table_rows_and_ratio():
    lines = callgrind.table({("h1", "sidecar"): 28328, ("h1", "nginx"): 21126, ("h1", "haproxy"): 35300,
                             ("h2c", "sidecar"): 90427, ("h2c", "haproxy"): 55929,
                             ("h1tls", "sidecar"): 76795})
    assert lines[0].split() == ["sidecar", "nginx", "HAProxy", "sidecar/fewest"]
    # Over the fewest of the proxies that have a count; `-` for a server without one, and for the
    # ratio when no proxy has a count.
    assert lines[1].split()[-4:] == ["28328", "21126", "35300", "1.34x"]
    assert lines[2].split()[-4:] == ["90427", "-", "55929", "1.62x"]
    assert lines[3].split()[-4:] == ["76795", "-", "-", "-"]


def callgrind_results(directory, counts):
    """A results directory with the runs of `counts` ({profile name: (Ir at 2000, Ir at 12000)}),
    each with the fixtures' h2load output of every call answered."""
    for name, totals in counts.items():
        for calls, total in zip((2000, 12000), totals):
            (directory / f"callgrind-{name}-{calls}.out").write_text(f"events: Ir\nsummary: {total}\n")
            (directory / f"h2load-callgrind-{name}-{calls}.txt").write_text(
                fixture_text(f"h2load-callgrind-h1-{calls}.txt"))


def test_callgrind_table_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PROXY_CREDENTIAL", "jwt")
    monkeypatch.setenv("CREDENTIAL_BYTES", "733")
    callgrind_results(tmp_path, {name: (1_000_000, 1_000_000 + 10_000 * per_call) for name, per_call in {
        "h1": 30, "h2c": 90, "h1tls": 80, "h1-nginx": 20, "h1tls-nginx": 40,
        "h1-haproxy": 35, "h2c-haproxy": 60, "h1tls-haproxy": 50}.items()})
    assert main(["callgrind-table", str(tmp_path), "2000", "12000", "sidecar", "nginx", "haproxy"]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The proxies' credential first, in the words of the other tables.
    assert lines[0] == ("nginx and HAProxy set Authorization to a stand-in provider's JWT (733 bytes with `Bearer `), "
                        "as long as the sidecar's")
    rows = [line.split()[-4:] for line in lines[2:]]
    assert rows == [["30", "20", "35", "1.50x"], ["90", "-", "60", "1.50x"], ["80", "40", "50", "2.00x"]]
    # The sidecar alone: the proxies' profiles are not read, and no credential line.
    assert main(["callgrind-table", str(tmp_path), "2000", "12000", "sidecar"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["sidecar", "nginx", "HAProxy", "sidecar/fewest"]
    assert lines[1].split()[-4:] == ["30", "-", "-", "-"]


def test_callgrind_table_command_refuses_a_missing_or_short_run(tmp_path, capsys):
    callgrind_results(tmp_path, {"h1": (1, 2), "h2c": (1, 2), "h1tls": (1, 2), "h1-nginx": (1, 2)})
    assert main(["callgrind-table", str(tmp_path), "2000", "12000", "sidecar", "nginx"]) == 1
    assert "h2load-callgrind-h1tls-nginx-2000.txt" in capsys.readouterr().err
    # A run whose h2load output shows fewer calls than it was asked for.
    (tmp_path / "h2load-callgrind-h1tls-12000.txt").write_text(fixture_text("h2load-callgrind-h1-2000.txt"))
    assert main(["callgrind-table", str(tmp_path), "2000", "12000", "sidecar"]) == 1
    assert "2000 of 12000 calls succeeded" in capsys.readouterr().err
    assert main(["callgrind-table", str(tmp_path), "2000", "12000", "nginx"]) == 2
