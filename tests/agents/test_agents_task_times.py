"""Task rows carry the gateway's own start and finish times with the polled run time and the poll interval
beside them, against the simulator's task board.

Truth: the board's started_at/finished_at of each task (read back by an independent client) and its
--task-seconds knob.
"""

from __future__ import annotations

import httpx
import pytest

from agents.gateways.task_board import TaskAgent
from analysis.load import load_run
from analysis.tasks import task_timing_table
from contract import schema
from tests.gateways.harness import agent_user, rows

pytestmark = pytest.mark.e2e

TASK_S = 0.4
INTERVAL_S = 0.3


def test_board_times_replace_the_polled_ones_which_stay_beside_them(simulator, tmp_path):
    gateway = simulator("--task-seconds", str(TASK_S), "--task-llm-calls", "1")
    options = {"poll_interval": INTERVAL_S, "task_timeout": 20.0, "cleanup": False}
    with agent_user(TaskAgent, gateway.url, tmp_path, **options) as user:
        for _ in range(2):
            user.run_task(round_no=None)
    tasks = rows(tmp_path, schema.TASKS_CSV)
    assert [t["status"] for t in tasks] == ["done", "done"], tasks
    for task in tasks:
        board = httpx.get(f"{gateway.url}/v1/tasks/{task['task_id']}").json()
        assert task["times_from"] == "gateway" and float(task["poll_interval_ms"]) == INTERVAL_S * 1000
        assert float(task["started_ts"]) == board["started_at"], (task, board)
        assert abs(float(task["run_ms"]) - (board["finished_at"] - board["started_at"]) * 1000) < 1, task
        assert float(task["run_ms"]) >= TASK_S * 1000 - 20, task
        # polled: seen running at one poll, done at a later one, so a whole number of intervals (+ latency)
        polled = float(task["polled_run_ms"])
        assert polled >= INTERVAL_S * 1000 - 20, task


def test_report_timing_table_shows_the_polled_run_time_beside_the_gateways(simulator, tmp_path):
    gateway = simulator("--task-seconds", str(TASK_S), "--task-llm-calls", "1")
    with agent_user(TaskAgent, gateway.url, tmp_path, poll_interval=INTERVAL_S, task_timeout=20.0) as user:
        user.run_task(round_no=None)
    timing = task_timing_table(load_run(tmp_path))
    polled = f"run time as polled (every {INTERVAL_S * 1000:g} ms)"
    assert list(timing.index) == ["queue wait", "run time", "ready -> done", polled], timing
    assert timing.loc[polled, "n"] == 1 and timing.loc["run time", "n"] == 1
