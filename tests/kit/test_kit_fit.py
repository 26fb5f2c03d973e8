"""The fit profile end to end against the simulator's knobs (known truth read back): each working agent's
task a worker process holding --worker-mib, so MiB per working agent moves by exactly the knob between two
runs (the worker interpreter's own cost cancels), and a memory budget binds as "memory"; a concurrency cap
of 3 chats makes a TTFT SLO bind as "SLO" at the fourth agent.

Each run is a real `locust -f locustfile.py --headless` process; run.json and summary.json are checked.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from contract import exit_codes, schema
from tests.locust_runs import locust_command
from tests.paths import REPO

pytestmark = pytest.mark.e2e

FAST = ("--step-every", "3s", "--sample-interval", "0.25", "--stop-timeout", "1")
BOARD = "--max-in-progress 100 --task-seconds 900 --dispatch-interval 0.2 --worker-mib {mib}"
KNOB_TOLERANCE = 0.05  # of the knob: the MiB per working agent difference read back


def start(run_dir, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        locust_command(run_dir, *args), cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finished(proc: subprocess.Popen, run_dir) -> tuple[dict, dict]:
    _, err = proc.communicate(timeout=150)
    assert proc.returncode == exit_codes.OK, err[-1500:]
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    return meta, json.loads((run_dir / schema.SUMMARY_JSON).read_text())["fit"]


def test_mib_per_working_agent_moves_by_the_worker_memory_knob_and_the_budget_binds_as_memory(tmp_path):
    """Two runs at once, TaskAgent on the board with 15-minute tasks: workers of 60 MiB against a budget
    the fourth one crosses, and workers of 0 MiB up to a cap of 4."""
    heavy, light = tmp_path / "heavy", tmp_path / "light"
    task = ("TaskAgent", "--load-profile", "fit", *FAST, "--poll-interval", "1")
    procs = [
        (
            start(
                heavy,
                *task,
                "--sim-args",
                BOARD.format(mib=60),
                "--max-agents",
                "6",
                "--memory-budget",
                "330MiB",
            ),
            heavy,
        ),
        (start(light, *task, "--sim-args", BOARD.format(mib=0), "--max-agents", "4"), light),
    ]
    (heavy_meta, heavy_fit), (_, light_fit) = (finished(p, d) for p, d in procs)
    assert heavy_fit["binding"] == "memory" and heavy_meta["fit"]["binding"] == "memory"
    assert heavy_fit["n_per_limit"]["memory"]["how"] == "measured"
    assert light_fit["binding"] == "cap" and light_fit["n_fit"] == 4
    assert heavy_fit["r2"] > 0.99 and light_fit["r2"] > 0.9
    difference = heavy_fit["mib_per_working_agent"] - light_fit["mib_per_working_agent"]
    assert difference == pytest.approx(60, rel=KNOB_TOLERANCE), (heavy_fit, light_fit)
    steps = heavy_meta["fit"]["steps"]
    assert [s["agents"] for s in steps][:3] == [0, 1, 2] and all(s["steady"] for s in steps)


def test_a_ttft_slo_binds_as_slo_at_the_simulators_concurrency_cap(tmp_path):
    """Three chats at once are served, the fourth refused (429: a miss): the SLO binds at 4 agents and 3
    fit (within one step)."""
    run_dir = tmp_path / "run"
    sim = "--ttft-ms 300 --itl-ms 10 --output-tokens 5 --max-concurrent-chats 3"
    proc = start(
        run_dir,
        "ChatAgent",
        "--load-profile",
        "fit",
        *FAST,
        "--max-agents",
        "8",
        "--think-time",
        "0",
        "--sim-args",
        sim,
        "--slo",
        "ttft_ms p95 <= 1000",
    )
    meta, fit = finished(proc, run_dir)
    assert fit["binding"] == "SLO", meta["fit"]["stop_reason"]
    assert fit["n_fit"] in (2, 3, 4) and fit["n_per_limit"]["SLO"]["how"] == "measured"
    scored = meta["fit"]["steps"]
    assert all(s["goodput"] >= 0.95 for s in scored[1:-1]) and scored[-1]["goodput"] < 0.95
