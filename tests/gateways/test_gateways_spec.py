"""A spec file reproducing the simulator's task protocol gives the same task rows as the built-in
TaskAgent, and cleanup archives only the tasks the agent created (untagged tasks on the board survive).

Truth: the simulator's knobs (--task-seconds, --task-llm-calls, --prompt-tokens, --output-tokens).
"""

from __future__ import annotations

import httpx
import pytest

from agents.gateways.spec import SpecAgent
from agents.gateways.task_board import TaskAgent
from contract import schema
from tests.gateways.harness import agent_user, rows

pytestmark = pytest.mark.e2e

SPEC = "examples/specs/simulator-tasks.toml"
TASK_S = 0.4
KNOBS = (
    "--dispatch-interval", "0.05", "--task-seconds", str(TASK_S), "--task-llm-calls", "2",
    "--prompt-tokens", "100", "--output-tokens", "5", "--ttft-ms", "5", "--itl-ms", "1", "--worker-mib", "1",
)  # fmt: skip
OPTIONS = {"spec_file": SPEC, "poll_interval": 0.05, "task_timeout": 20.0, "prompt": "Do a small task."}
SAME = ("status", "llm_calls", "tokens_in", "tokens_cached", "tokens_out", "model", "error")
TASKS = 3


def run_tasks(user_class, url: str, run_dir) -> list[dict]:
    with agent_user(user_class, url, run_dir, **OPTIONS) as user:
        for _ in range(TASKS):
            user.run_task(round_no=None)
    return rows(run_dir, schema.TASKS_CSV)


@pytest.fixture
def board(simulator):
    return simulator(*KNOBS)


@pytest.mark.timing
def test_spec_file_gives_the_same_task_rows_as_the_task_agent(board, tmp_path):
    built_in = run_tasks(TaskAgent, board.url, tmp_path / "builtin")
    by_spec = run_tasks(SpecAgent, board.url, tmp_path / "spec")
    assert len(built_in) == len(by_spec) == TASKS
    for ours, theirs in zip(by_spec, built_in, strict=True):
        assert {k: ours[k] for k in SAME} == {k: theirs[k] for k in SAME}
        assert ours["status"] == "done" and ours["tokens_out"] == "10"  # 2 calls x 5 tokens
        assert ours["worker_pid"] and theirs["worker_pid"]
        # durations come from the gateway's own timestamps: both read the knob back within 150 ms, fixed:
        # client-side timing (the bug it catches) reads a poll interval (500 ms) late
        for row in (ours, theirs):
            assert abs(float(row["run_ms"]) - TASK_S * 1000) < 150, row
            assert float(row["total_ms"]) >= float(row["run_ms"])
    ops = {r["operation"] for r in rows(tmp_path / "spec", schema.REQUESTS_CSV)}
    assert ops == {r["operation"] for r in rows(tmp_path / "builtin", schema.REQUESTS_CSV)}


def test_cleanup_archives_only_the_tasks_the_agent_created(board, tmp_path):
    untagged = [
        httpx.post(
            f"{board.url}/v1/tasks", json={"title": f"real work {n}", "prompt": "x", "tags": []}
        ).json()["id"]
        for n in range(2)
    ]
    with agent_user(SpecAgent, board.url, tmp_path, **OPTIONS) as user:
        ours = [user.run_task(round_no=None).task_id for _ in range(2)]
    status = {t: httpx.get(f"{board.url}/v1/tasks/{t}").json()["status"] for t in untagged + ours}
    assert all(status[t] == "archived" for t in ours), status
    assert all(status[t] != "archived" for t in untagged), status
