"""processes.csv lists exactly the processes the sampler counted: a target tree (parent and child) as
`target`, a process named by --sidecar-match as `sidecar` and never in the target, each once, with its
command line; process_readings.csv has each target process at every reading, with its parent and RSS
(the sidecar never).

Truth: the pids and command lines of processes this test starts.
"""

from __future__ import annotations

import csv
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from contract import schema
from sampler.loop import Sampler
from sampler.options import SamplerOptions

pytestmark = pytest.mark.e2e

PARENT = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'import time; time.sleep(60)'])"


def test_processes_file_lists_target_tree_and_sidecar_once_each(tmp_path):
    marker = f"loadkit-sidecar-{uuid.uuid4().hex}"
    parent = subprocess.Popen([sys.executable, "-c", PARENT])
    sidecar = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        child = wait_for_child(parent.pid)
        parent_ppid = psutil.Process(parent.pid).ppid()
        opts = SamplerOptions(
            out=str(tmp_path / schema.SAMPLES_CSV),
            pids=[parent.pid],
            sidecar_matches=[marker],
            tree_refresh_s=0.1,
        )
        sampler = Sampler(opts)
        for _ in range(3):
            sampler.tick()
        sampler.close()
    finally:
        for process in (parent, sidecar):
            process.kill()
            process.wait(5)
    with (tmp_path / schema.PROCESSES_CSV).open(newline="") as handle:
        listed = list(csv.DictReader(handle))
    assert tuple(listed[0]) == schema.PROCESS_COLUMNS
    roles = {(row["role"], int(row["pid"])) for row in listed}
    assert roles == {("target", parent.pid), ("target", child), ("sidecar", sidecar.pid)}, listed
    assert len(listed) == 3  # each once, though read three times
    by_pid = {int(row["pid"]): row for row in listed}
    assert marker in by_pid[sidecar.pid]["command"] and int(by_pid[child]["ppid"]) == parent.pid
    with (tmp_path / schema.PROCESS_READINGS_CSV).open(newline="") as handle:
        read = list(csv.DictReader(handle))
    samples = (tmp_path / schema.SAMPLES_CSV).read_text().splitlines()[1:]
    assert {(int(r["pid"]), int(r["ppid"])) for r in read} == {(parent.pid, parent_ppid), (child, parent.pid)}
    assert len(read) == 2 * len(samples) == 6 and all(int(r["rss_bytes"]) > 1024 * 1024 for r in read)
    assert {r["ts"] for r in read} == {row.split(",")[0] for row in samples}  # the readings' own ts


def wait_for_child(pid: int) -> int:
    process = psutil.Process(pid)
    for _ in range(100):
        children = process.children()
        if children:
            return children[0].pid
        time.sleep(0.05)
    raise AssertionError("the test parent never started its child")
