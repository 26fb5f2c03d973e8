"""Fault suite: the run directory's filesystem fills up mid-run (a 2 MiB tmpfs mounted for the test, as
root; skipped with its reason where mounting is not permitted). The run stops with exit code 5, says
which file and why, keeps whole rows only, and still writes run.json and the report.
"""

from __future__ import annotations

import errno
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


def test_a_full_disk_stops_the_run_with_exit_5_whole_rows_and_a_record(small_disk, tmp_path):
    run_dir = small_disk / "run"
    kit = KitProcess.start(
        run_dir,
        *chat_smoke_args("60s", "--ttft-ms 20 --output-tokens 40", "--sample-interval", "0.2"),
        logs=tmp_path,  # not on the disk that fills up
    )
    try:
        kit.wait_rows(schema.REQUESTS_CSV, 10)
        fill(small_disk / "filler")
        code = kit.wait()
    finally:
        kit.kill()
    stderr = kit.stderr
    assert code == exit_codes.DISK_ERROR, stderr[-2000:]
    assert "Traceback" not in stderr
    ours = [line for line in stderr.splitlines() if line.startswith("loadkit: error:")]
    assert len(ours) == 1 and f"cannot write {run_dir}/" in ours[0] and "(ENOSPC)" in ours[0], stderr[-3000:]
    sampler = [line for line in stderr.splitlines() if line.startswith("sampler: error:")]
    assert all("samples.csv: No space left on device (ENOSPC)" in line for line in sampler)  # its own say
    meta = kit.meta()
    assert meta["exit_code"] == exit_codes.DISK_ERROR
    assert meta["stop_reason"].startswith("disk error: cannot write") and "(ENOSPC)" in meta["stop_reason"]
    assert_whole_rows(run_dir)
    sent = pd.read_csv(run_dir / "locust_stats.csv").set_index("Name").loc["Aggregated", "Request Count"]
    answered = (pd.read_csv(run_dir / schema.REQUESTS_CSV).error_kind != "interrupted").sum()
    assert 10 <= answered <= sent  # rows lost to the full disk, never half a row
    assert "disk error" in (run_dir / schema.REPORT_MD).read_text()
    assert "disk error" in kit.stdout and not (run_dir / RESERVE_NAME).exists()
    assert_nothing_left(meta)
