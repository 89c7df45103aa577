"""The idle mode's table (benchstats.idle): a fresh sidecar's resident memory by kind of upstream,
its anonymous and file-backed parts and the mappings that hold it, from /proc/PID/status and smaps
captured by `scripts/bench idle` (fixtures/README.md)."""
from __future__ import annotations

import re

import pytest
from bench_fixtures import fixture_text

from benchstats import idle
from benchstats.__main__ import report
from benchstats.results import ResultsDir

# The run's binary was /tmp/ftp-fs11; its smaps names it so.
BINARY = "ftp-fs11"


def test_groups_of_mappings():
    assert idle.group_of("/tmp/ftp-fs11", BINARY) == "binary"
    assert idle.group_of("/usr/lib/x86_64-linux-gnu/libcrypto.so.3", BINARY) == "libcrypto"
    assert idle.group_of("/usr/lib/x86_64-linux-gnu/libssl.so.3", BINARY) == "libssl"
    assert idle.group_of("/usr/lib/x86_64-linux-gnu/libc.so.6", BINARY) == "libc"
    assert idle.group_of("[heap]", BINARY) == "heap"
    # Not libc: other libraries whose names begin alike, anonymous memory, the stack.
    for path in ("/usr/lib/x86_64-linux-gnu/libcrypt.so.1", "/usr/lib/x86_64-linux-gnu/libcap.so.2", "", "[stack]"):
        assert idle.group_of(path, BINARY) == "other"


def test_resident_by_group_adds_up_to_vmrss():
    groups = idle.resident_by_group(fixture_text("idle-https.smaps"), BINARY)
    vmrss = int(re.search(r"VmRSS:\s+(\d+)", fixture_text("idle-https.status")).group(1))
    assert sum(groups.values()) == vmrss == 12872
    # A TLS connection open: libcrypto's code and tables are resident, and so is the binary.
    assert groups["libcrypto"] > 3000 and groups["binary"] > 3000 and groups["heap"] > 0
    assert idle.resident_by_group(fixture_text("idle-https.smaps"), "another-name")["binary"] == 0


def with_vmrss(status: str, kb: int) -> str:
    return re.sub(r"^VmRSS:.*$", f"VmRSS:\t{kb:8d} kB", status, flags=re.MULTILINE)


@pytest.fixture
def results(tmp_path):
    """Three samples of each kind, the fixture's status with VmRSS changed so that the median
    is the second largest; only https's samples have smaps."""
    (tmp_path / "settings.env").write_text(
        f"MODE=idle\nIDLE_SAMPLES=3\nIDLE_SETTLE_S=1\nBINARY={BINARY}\nNPROC=2\nKERNEL=Linux 6.1\n"
        "NGINX_VERSION=nginx version: nginx/1.22.1\nCOMMIT=abc1234\nLOAD_BEFORE=0.5 0.4 0.3\n"
        "LOAD_AFTER=0.6 0.5 0.4\nFINISHED=2026-11-27T18:57:17Z\n")
    (tmp_path / "status.tsv").write_text("")
    for kind in ("http", "https", "https-down"):
        status = fixture_text(f"idle-{kind}.status")
        kb = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))
        for number, offset in ((1, 300), (2, 0), (3, -200)):
            (tmp_path / f"idle-{kind}-{number}.status").write_text(with_vmrss(status, kb + offset))
            if kind == "https":
                (tmp_path / f"idle-{kind}-{number}.smaps").write_text(fixture_text("idle-https.smaps"))
    return tmp_path


def test_median_sample_by_vmrss(results):
    table = idle.IdleReport(ResultsDir(results))
    assert [s.number for s in table.samples("https")] == [1, 2, 3]
    median = table.median("https")
    assert median.number == 2 and median.rss_kb == 12872
    assert (median.parts.anon_kb, median.parts.file_kb) == (1984, 10888)
    assert table.quantities()["https.rss_mb"] == 12.57
    assert table.quantities()["http.rss_mb"] == 9.03


def test_table_and_targets(results):
    lines = idle.IdleReport(ResultsDir(results)).lines()
    rows = {line[:30].strip(): line[30:].split() for line in lines if line.startswith(("http://", "https://"))}
    assert list(rows) == ["http://, answering", "https://, answering (TLS, h2)", "https://, refusing the dial"]
    # RSS, anon, file, then binary, libcrypto, libssl, libc, heap, other (MB).
    assert rows["https://, answering (TLS, h2)"][:3] == ["12.57", "1.9", "10.6"]
    assert rows["https://, answering (TLS, h2)"][4] == "4.0"
    assert rows["http://, answering"][3:] == ["0.0"] * 6  # no smaps kept for it
    verdicts = {line[:58].strip(): line[58:].split() for line in lines if line.startswith("idle RSS, MB")}
    assert verdicts["idle RSS, MB: https upstream answering"] == ["12.57", "<=", "12", "no"]
    assert verdicts["idle RSS, MB: https upstream refusing the dial"] == ["11.86", "<=", "12", "yes"]
    assert verdicts["idle RSS, MB: http upstream answering"] == ["9.03", "<=", "12", "yes"]


def test_report_fails_for_a_sidecar_that_did_not_start(results, capsys):
    (results / "status.tsv").write_text("idle-https-down\tthe sidecar did not start: port in use\n")
    for path in results.glob("idle-https-down-*"):
        path.unlink()
    assert report(str(results)) == 1
    out = capsys.readouterr()
    assert "status: idle-https-down: the sidecar did not start: port in use" in out.out
    assert "refusing the dial" in out.out and (results / "summary.txt").exists()


def test_a_kind_without_samples_is_a_failure(results):
    for path in results.glob("idle-http-*"):
        path.unlink()
    assert idle.IdleReport(ResultsDir(results)).failures() == ["idle-http: no sample"]

