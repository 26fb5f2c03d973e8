"""`python -m analysis RUN_DIR` rebuilds the report of any run directory the kit can leave behind: a real
run killed with SIGKILL or stopped by SIGTERM, and copies of a real run damaged the ways disks and crashes
damage files (truncated last line, malformed and binary rows, run.json fields of unexpected types), or
mounted read-only (--out). Never a traceback; what is missing or skipped is named in the report."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from analysis.load import load_run
from contract import exit_codes
from tests.locust_runs import chat_smoke, csv_rows, locust_command, wait_for
from tests.paths import REPO

pytestmark = pytest.mark.e2e


def rebuild(run_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analysis", str(run_dir), *extra],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )


def assert_rebuilt(proc: subprocess.CompletedProcess, report_dir: Path, *named: str) -> str:
    assert proc.returncode == exit_codes.OK, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    md = (report_dir / "report.md").read_text()
    assert (report_dir / "report.html").stat().st_size > 0 and md.startswith("# Run report")
    for words in named:
        assert words in md, words
    return md


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> Path:
    """One real, short chat run against the simulator, completed normally."""
    run_dir = tmp_path_factory.mktemp("real") / "run"
    proc = chat_smoke(run_dir, "6s", "--ttft-ms 50 --itl-ms 5")
    # any completed run will do: on a busy machine the generator may be judged saturated (4)
    completed = (exit_codes.OK, exit_codes.REQUEST_ERRORS, exit_codes.INVALID_RUN)
    assert proc.returncode in completed and csv_rows(run_dir / "requests.csv") > 0, proc.stderr[-2000:]
    return run_dir


@pytest.fixture
def damaged(real_run, tmp_path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(real_run, copy)
    for name in ("report.md", "report.html"):
        (copy / name).unlink(missing_ok=True)
    return copy


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_run_killed_mid_load_is_rebuilt_naming_what_it_lacks(tmp_path, sig):
    run_dir = tmp_path / "run"
    cmd = locust_command(
        run_dir, "ChatAgent", "--load-profile", "smoke", "--peak-users", "2", "--duration", "60s"
    )
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        wait_for(lambda: csv_rows(run_dir / "requests.csv") >= 5, 60, "requests on disk")
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:  # the simulator and sampler a killed kit leaves behind share its process group
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    meta = json.loads((run_dir / "run.json").read_text())
    md = assert_rebuilt(rebuild(run_dir), run_dir, "## Headline", "## Latency per operation")
    if "end_ts" not in meta:  # what a kill leaves: the report says the run did not finish
        assert "the run did not finish" in md


def test_disk_full_truncated_last_lines_are_dropped_and_named(damaged):
    for name in ("requests.csv", "samples.csv"):
        raw = (damaged / name).read_bytes()
        (damaged / name).write_bytes(raw[: len(raw) - 7])
    assert_rebuilt(
        rebuild(damaged),
        damaged,
        "requests.csv ends in a truncated line",
        "samples.csv ends in a truncated line",
    )


def test_malformed_and_binary_rows_are_skipped_and_counted(damaged):
    rows = len(load_run(damaged).requests)
    lines = (damaged / "requests.csv").read_bytes().splitlines(keepends=True)
    bad = [b"1,2,3\n", b"\x00\xff\xfe garbage \x81,\x00\n", lines[1].rstrip(b"\r\n") + b",extra,fields\r\n"]
    (damaged / "requests.csv").write_bytes(b"".join(lines[:2] + bad + lines[2:]))
    md = assert_rebuilt(rebuild(damaged), damaged, "requests.csv: 3 malformed or binary row(s) skipped")
    assert f"| requests | {rows} |" in md


def test_run_json_fields_of_unknown_types_are_ignored_and_named(damaged):
    meta = json.loads((damaged / "run.json").read_text())
    meta.update(start_ts="yesterday", target=5, thresholds={"expr": 1}, exit_code="zero")
    meta["profile"]["phases"] = [{"name": "ramp", "start_ts": "soon"}, *meta["profile"]["phases"]]
    meta["profile"]["phases"][-1]["end_ts"] = None
    (damaged / "run.json").write_text(json.dumps(meta))
    assert_rebuilt(
        rebuild(damaged),
        damaged,
        "run.json field 'start_ts' is a str, not number: ignored",
        "run.json field 'target' is a int, not dict: ignored",
        "run.json field 'thresholds' is a dict, not list: ignored",
        "1 phases entr(ies) without a start time ignored",
        "has no end (run killed?): closed at the last recorded row",
    )


def test_a_read_only_run_directory_is_reported_into_out_dir(damaged, tmp_path):
    mount = tmp_path / "ro"
    mount.mkdir()
    bound = subprocess.run(["mount", "--bind", str(damaged), str(mount)], capture_output=True)
    if bound.returncode != 0:
        pytest.skip(f"bind mounts not permitted here: {bound.stderr.decode().strip()}")
    try:
        ro = subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], capture_output=True)
        if ro.returncode != 0:
            pytest.skip(f"read-only remount not permitted: {ro.stderr.decode().strip()}")
        refused = rebuild(mount)
        assert refused.returncode == exit_codes.BAD_INPUT and "Traceback" not in refused.stderr
        assert refused.stderr.count("\n") == 1 and "--out DIR" in refused.stderr
        out = tmp_path / "elsewhere"
        assert_rebuilt(rebuild(mount, "--out", str(out)), out, "## Headline")
        assert not (damaged / "report.md").exists()
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.parametrize(
    "args",
    [
        ["/nonexistent-run-dir"],
        ["index", "/nonexistent-runs"],
        [],
        [str(REPO / "docs"), "--warning-mib", "inf"],
        [str(REPO / "docs"), "--warning-mib", "-5"],
        ["index"],
        [str(REPO / "docs")],  # a directory that is no run: nothing written into it
    ],
)
def test_bad_input_is_one_line_and_exit_2(args):
    proc = subprocess.run(
        [sys.executable, "-m", "analysis", *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert proc.returncode == exit_codes.BAD_INPUT
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
