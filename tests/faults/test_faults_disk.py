"""Fault suite: the run directory's filesystem fills up mid-run (a 2 MiB tmpfs mounted for the test, as
root; skipped with its reason where mounting is not permitted). The run stops with exit code 5, says
which file and why, keeps whole rows only, and still writes run.json and the report.
"""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from contract import exit_codes, schema
from kit.disk import RESERVE_NAME
from tests.fault_runs import KitProcess, assert_nothing_left, assert_whole_rows
from tests.locust_runs import chat_smoke_args

pytestmark = [pytest.mark.faults, pytest.mark.e2e]


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(path: Path) -> None:
    """Write until the filesystem refuses, in ever smaller pieces, so it is full to the last block."""
    with open(path, "wb", buffering=0) as filler:
        for size in (65536, 4096, 512, 1):
            try:
                while True:
                    filler.write(b"x" * size)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC


def leave_free(path: Path, free_bytes: int) -> None:
    """Fill the filesystem, then give back `free_bytes` (the filler shrinks by that much)."""
    fill(path)
    os.truncate(path, max(0, path.stat().st_size - free_bytes))


def disk_error_run(
    run_dir: Path, logs: Path, args: tuple[str, ...], rows: int, fill_disk
) -> tuple[KitProcess, str]:
    """The kit on the small disk, filled by `fill_disk()` once `rows` requests are recorded (0: before it
    starts); checks exit 5 with no traceback and returns the kit and its one `loadkit: error:` line."""
    if not rows:
        fill_disk()
    kit = KitProcess.start(run_dir, *args, logs=logs)  # logs: not on the disk that fills up
    try:
        if rows:
            kit.wait_rows(schema.REQUESTS_CSV, rows)
            fill_disk()
        code = kit.wait()
    finally:
        kit.kill()
    stderr = kit.stderr
    assert code == exit_codes.DISK_ERROR, stderr[-2000:]
    assert "Traceback" not in stderr
    ours = [line for line in stderr.splitlines() if line.startswith("loadkit: error:")]
    assert len(ours) == 1, stderr[-3000:]
    assert kit.meta()["exit_code"] == exit_codes.DISK_ERROR
    return kit, ours[0]


def test_a_full_disk_stops_the_run_with_exit_5_whole_rows_and_a_record(small_disk, tmp_path):
    run_dir = small_disk / "run"
    args = chat_smoke_args("60s", "--ttft-ms 20 --output-tokens 40", "--sample-interval", "0.2")
    kit, ours = disk_error_run(run_dir, tmp_path, args, 10, lambda: fill(small_disk / "filler"))
    assert f"cannot write {run_dir}/" in ours and "(ENOSPC)" in ours
    sampler = [line for line in kit.stderr.splitlines() if line.startswith("sampler: error:")]
    assert all("samples.csv: No space left on device (ENOSPC)" in line for line in sampler)  # its own say
    meta = kit.meta()
    assert meta["stop_reason"].startswith("disk error: cannot write") and "(ENOSPC)" in meta["stop_reason"]
    assert_whole_rows(run_dir)
    sent = pd.read_csv(run_dir / "locust_stats.csv").set_index("Name").loc["Aggregated", "Request Count"]
    answered = (pd.read_csv(run_dir / schema.REQUESTS_CSV).error_kind != "interrupted").sum()
    assert 10 <= answered <= sent  # rows lost to the full disk, never half a row
    assert "disk error" in (run_dir / schema.REPORT_MD).read_text()
    assert "disk error" in kit.stdout and not (run_dir / RESERVE_NAME).exists()
    assert_nothing_left(meta)


def test_a_disk_too_full_at_the_start_refuses_the_run_with_exit_5_and_one_line(small_disk, tmp_path):
    """4 KiB free: not even the run record's 512 KiB reserve fits. It used to be a sampler traceback and
    exit 1 (or exit 2, "bad input"); now nothing starts, one line says why, and run.json says so."""
    run_dir = small_disk / "run"
    args = chat_smoke_args("5s", "--ttft-ms 20")
    kit, ours = disk_error_run(run_dir, tmp_path, args, 0, lambda: leave_free(small_disk / "filler", 4096))
    assert "(ENOSPC)" in ours and "no room" in ours
    assert kit.meta()["stop_reason"].startswith("disk error: ")
    assert not (run_dir / schema.SAMPLES_CSV).exists()  # nothing started


def test_a_disk_that_fills_up_by_the_end_is_exit_5_with_an_honest_record(small_disk, tmp_path):
    """150 KiB left once rows flow: the rows still fit, Locust's own HTML report (about 1 MB) does not. It
    used to raise ENOSPC after run.json said exit 0 "profile complete" (rc 1, no report); now the kit writes
    that HTML itself, whole or not at all, before the record, and the run ends with exit code 5."""
    run_dir = small_disk / "run"
    args = chat_smoke_args("8s", "--ttft-ms 20")
    kit, ours = disk_error_run(
        run_dir, tmp_path, args, 1, lambda: leave_free(small_disk / "filler", 150 * 1024)
    )
    assert f"cannot write {run_dir}/{schema.LOCUST_HTML}" in ours
    meta = kit.meta()
    assert meta["stop_reason"].startswith(f"disk error: cannot write {run_dir}/{schema.LOCUST_HTML}")
    assert meta["locust_html"].startswith("not written")
    assert not (run_dir / schema.LOCUST_HTML).exists()
    assert not list(run_dir.glob("*.tmp"))  # never half a file
    assert_whole_rows(run_dir)
    assert "disk error" in (run_dir / schema.REPORT_MD).read_text()
    assert f"exit code: {exit_codes.DISK_ERROR}" in kit.stdout and not (run_dir / RESERVE_NAME).exists()
    assert_nothing_left(meta)
