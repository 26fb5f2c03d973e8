"""The rounds table's per-worker memory reads what a worker holds, not the readings taken before it
allocated: a rounds run on the simulator whose task workers each reach 169 MiB over 3 s (as an agent
process importing its libraries does) reads back 169 MiB plus the worker's own interpreter within 5 %.

Before, every reading counted, those during the ramp included, and the mean read far below the truth
(80-110 MiB for workers holding ~180). Real Locust, real simulator, real sampler; ~40 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from analysis.load import load_run
from analysis.rounds import rounds_table
from contract.schema import MIB
from tests.locust_runs import run_locust
from tests.paths import REPO

pytestmark = pytest.mark.e2e
WORKER_MIB = 169.0
BOARD = f"--worker-mib {WORKER_MIB:g} --worker-ramp-s 3 --task-seconds 10 --dispatch-interval 0.2"


def idle_worker_mib() -> float:
    """The RSS of a task worker holding nothing: what each worker adds beside its --worker-mib."""
    argv = [
        sys.executable,
        "-m",
        "simgateway.task_worker",
        "--url",
        "http://127.0.0.1:9",
        "--task-id",
        "probe",
    ]
    argv += ["--gateway-pid", str(os.getpid()), "--until", repr(time.time() + 20)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    worker = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert "started" in (worker.stdout.readline() if worker.stdout else "")
        return psutil.Process(worker.pid).memory_info().rss / MIB
    finally:
        worker.kill()
        worker.wait(10)


def test_rounds_per_worker_memory_reads_a_169_mib_worker_within_5_percent(tmp_path):
    run_dir = tmp_path / "run"
    rounds = ("--load-profile", "rounds", "--rounds", "2,3", "--baseline", "2s", "--poll-interval", "0.2")
    done = run_locust(
        run_dir, "TaskAgent", *rounds, "--sample-interval", "0.5", "--sim-args", f"{BOARD} --task-llm-calls 0"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    truth = WORKER_MIB + idle_worker_mib()
    table = rounds_table(load_run(run_dir))
    assert table is not None and list(table.index) == [1, 2]
    for round_no, row in table.iterrows():
        assert row["worker_mib_from"].endswith("settled readings"), row
        assert row["worker_mib_mean"] == pytest.approx(truth, rel=0.05), (round_no, truth, row.to_dict())
        assert row["worker_mib_max"] == pytest.approx(truth, rel=0.05), (round_no, truth, row.to_dict())
