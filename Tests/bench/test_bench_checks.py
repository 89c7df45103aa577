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
