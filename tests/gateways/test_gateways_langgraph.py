"""LangGraph against a real dev server (langgraph-cli[inmem]) with an LLM-free graph on loopback: runs
reach success on an assistant found by search (the graph is not called `agent`), run times are the
server's own, the sampler's queue probe reads the server's queue through the preset, and cleanup
deletes only the agent's own thread; a joined run of a tool loop counts its graph's model answers and
tool results.

Truth: the graph's work_s input (run time), the server's created_at/updated_at of each run, and the
number of runs submitted beyond the worker slots, the tool graph's `tool_calls` input.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from agents.gateways.langgraph import LangGraphAgent
from agents.presets import preset
from contract import schema
from sampler.queue_probe import QueueProbe
from tests.gateways.harness import agent_user, free_port, installed, rows, running_server
from tests.paths import TEST_GATEWAYS

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.gateways,
    pytest.mark.skipif(
        not installed("langgraph_api"),
        reason="langgraph-cli[inmem] not installed (requirements-gateways.txt)",
    ),
]
APP = TEST_GATEWAYS / "langgraph_app"
TOOLS_APP = TEST_GATEWAYS / "langgraph_tools_app"  # apart: the echo tests find their graph by search
SLOTS = 1
WORK_S = 0.3
GRAPH = "echo"  # tests/gateways/langgraph_app/langgraph.json


@pytest.fixture(scope="module")
def langgraph_url(tmp_path_factory):
    with dev_server(APP, tmp_path_factory.mktemp("lg")) as url:
        yield url


@pytest.fixture(scope="module")
def langgraph_tools_url(tmp_path_factory):
    with dev_server(TOOLS_APP, tmp_path_factory.mktemp("lg-tools")) as url:
        yield url


@contextmanager
def dev_server(source: Path, folder: Path) -> Iterator[str]:
    """A dev server on a copy of a test app (the server writes its state beside langgraph.json)."""
    app = folder / "app"
    shutil.copytree(source, app)
    port = free_port()
    command = [
        shutil.which("langgraph") or "langgraph", "dev", "--port", str(port), "--no-browser", "--no-reload",
        "--n-jobs-per-worker", str(SLOTS),
    ]  # fmt: skip
    os.environ.setdefault("LANGGRAPH_CLI_NO_ANALYTICS", "1")
    with running_server(command, preset("langgraph").health_path, port, timeout_s=60, cwd=app) as url:
        yield url


@pytest.mark.timing
def test_runs_reach_success_and_take_the_graphs_work_time(langgraph_url, tmp_path):
    foreign = httpx.post(f"{langgraph_url}/threads", json={"metadata": {"owner": "someone else"}}).json()
    options = {"langgraph_input": {"prompt": "hi", "work_s": WORK_S}, "poll_interval": 0.05}
    with agent_user(LangGraphAgent, langgraph_url, tmp_path, task_timeout=20.0, **options) as user:
        for _ in range(2):
            user.run_and_wait()
        thread = user.thread_id
    tasks = rows(tmp_path, schema.TASKS_CSV)
    assert [t["status"] for t in tasks] == ["done", "done"], tasks
    for task in tasks:
        assert WORK_S * 1000 - 20 <= float(task["total_ms"]) < WORK_S * 1000 + 3000, task  # dispatch ~1 s
    assert httpx.get(f"{langgraph_url}/threads/{thread}").status_code == 404  # our thread deleted
    assert httpx.get(f"{langgraph_url}/threads/{foreign['thread_id']}").status_code == 200  # theirs kept


@pytest.mark.parametrize("tool_calls", [0, 3])
def test_a_joined_tool_loop_counts_its_model_answers_and_tool_results(
    langgraph_tools_url, tmp_path, tool_calls
):
    """The tool graph's model asks for `lookup` `tool_calls` times, one call a step, then answers; the
    prebuilt ToolNode runs each. Joined, each task row reads tool_calls = N and steps = N + 1 (the
    model's answers this turn, the earlier turns of the thread not counted); polled, unknown."""
    messages = [{"role": "user", "content": "look it up"}]
    inputs = {"messages": messages, "tool_calls": tool_calls}
    options = {"assistant_id": "tools", "langgraph_input": inputs, "poll_interval": 0.05}
    for join in (True, False):
        options["langgraph_join"] = join
        with agent_user(LangGraphAgent, langgraph_tools_url, tmp_path / str(join), **options) as user:
            for _ in range(2):
                user.run_and_wait()
    joined = rows(tmp_path / "True", schema.TASKS_CSV)
    counts = [str(tool_calls + 1), str(tool_calls)]
    assert [[t["status"], t["steps"], t["tool_calls"]] for t in joined] == [["done", *counts]] * 2, joined
    polled = rows(tmp_path / "False", schema.TASKS_CSV)
    assert [[t["status"], t["steps"], t["tool_calls"]] for t in polled] == [["done", "", ""]] * 2, polled


@pytest.mark.timing
def test_run_times_are_the_servers_own_within_50ms_with_the_polled_figure_beside(langgraph_url, tmp_path):
    work_s, interval = 0.5, 0.2
    options = {"langgraph_input": {"work_s": work_s}, "poll_interval": interval, "cleanup": False}
    with agent_user(LangGraphAgent, langgraph_url, tmp_path, task_timeout=20.0, **options) as user:
        for _ in range(3):
            user.run_and_wait()
    tasks = rows(tmp_path, schema.TASKS_CSV)
    server = {t["task_id"]: server_run_ms(langgraph_url, user.thread_id, t["task_id"]) for t in tasks}
    searched = [r for r in rows(tmp_path, schema.REQUESTS_CSV) if r["operation"] == "assistant.search"]
    assert [r["ok"] for r in searched] == ["1"], searched
    assert len(tasks) == 3
    for task in tasks:
        assert task["status"] == "done" and task["times_from"] == "gateway", task
        # 50 ms fixed, against the server's own run time: a client's polled span is up to 200 ms off
        assert abs(float(task["run_ms"]) - server[task["task_id"]]) < 50, (task, server)
        assert float(task["run_ms"]) >= work_s * 1000, task  # the graph's sleep is inside the server's span
        assert float(task["poll_interval_ms"]) == interval * 1000, task
        assert task["polled_run_ms"] == "" or float(task["polled_run_ms"]) >= 0, task


def server_run_ms(url: str, thread: str, run: str) -> float:
    """updated_at - created_at of a finished run, read by an independent client."""
    body = httpx.get(f"{url}/threads/{thread}/runs/{run}").json()
    created, updated = (datetime.fromisoformat(body[k]) for k in ("created_at", "updated_at"))
    return (updated - created).total_seconds() * 1000.0


def test_queue_probe_reads_runs_waiting_beyond_the_worker_slots(langgraph_url):
    submitted = 4
    for _ in range(submitted):
        thread = httpx.post(f"{langgraph_url}/threads", json={}).json()["thread_id"]
        body = {"assistant_id": GRAPH, "input": {"work_s": 3.0}}
        httpx.post(f"{langgraph_url}/threads/{thread}/runs", json=body).raise_for_status()
    queue = preset("langgraph").queue
    probe = QueueProbe(langgraph_url + queue.path, queue.queue_field, queue.in_progress_field, timeout_s=5)
    try:
        reading = wait_for(probe, lambda r: r.in_progress == SLOTS, timeout_s=10)
    finally:
        probe.close()
    assert reading.error is None and reading.queue_length == submitted - SLOTS, reading


def wait_for(probe: QueueProbe, condition, timeout_s: float):
    deadline = time.monotonic() + timeout_s
    reading = probe.read()
    while not condition(reading) and time.monotonic() < deadline:
        time.sleep(0.1)
        reading = probe.read()
    return reading
