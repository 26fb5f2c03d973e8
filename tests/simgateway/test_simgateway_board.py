"""The task board read back from outside: dispatcher cap, worker processes, usage, leak and detach knobs."""

from __future__ import annotations

import time

import psutil
import pytest

from simgateway import launch
from simgateway.client import request

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024
QUICK_LLM = ["--ttft-ms", "5", "--itl-ms", "1"]


def submit(url: str, n: int, tag: str = "run-1") -> list[str]:
    replies = [
        request(url, "POST", "/v1/tasks", {"title": f"t{i}", "prompt": "p" * 40, "tags": [tag]})
        for i in range(n)
    ]
    assert all(r.status == 201 and r.json()["status"] == "queued" for r in replies)
    return [r.json()["id"] for r in replies]


def inspect(url: str) -> dict:
    return request(url, "GET", "/v1/board/inspect").json()


def all_finished(url: str, ids: list[str]) -> list[dict] | None:
    tasks = [request(url, "GET", f"/v1/tasks/{i}").json() for i in ids]
    return tasks if all(t["status"] in ("done", "failed") for t in tasks) else None


def test_eight_tasks_with_max_in_progress_6_run_6_and_queue_2():
    """Tasks last 4 s: a worker must start and hold its 40 MiB while it is read, on a loaded CI host
    too (at 2 s one finished before its memory was read)."""
    args = [*QUICK_LLM, "--max-in-progress", "6", "--dispatch-interval", "0.2", "--task-seconds", "4",
            "--worker-mib", "40", "--task-llm-calls", "0"]  # fmt: skip
    with launch.running(args) as gw:
        ids = submit(gw.url, 8)
        board = launch.wait_for(lambda: (b := inspect(gw.url))["in_progress"] == 6 and b, 5, "6 running")
        assert board["queue_length"] == 2 and board["max_in_progress"] == 6
        pids = launch.wait_for(lambda: six_worker_pids(gw.url), 5, "6 worker pids")
        launch.wait_for(lambda: min(rss(p) for p in pids) >= 40 * MIB, 3.5, "worker-mib")
        tasks = launch.wait_for(lambda: all_finished(gw.url, ids), 20, "all 8 tasks to finish")
    started = sorted(t["started_at"] for t in tasks)
    first_done = min(t["finished_at"] for t in tasks)
    assert started[6] >= first_done  # the last two waited for a free slot
    assert all(t["status"] == "done" for t in tasks)


def six_worker_pids(url: str) -> list[int] | None:
    pids = [w["pid"] for w in inspect(url)["workers"] if w["pid"]]
    return pids if len(pids) == 6 else None


def rss(pid: int) -> int:
    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.NoSuchProcess:
        raise AssertionError(f"worker {pid} ended before its --worker-mib was read") from None


def test_task_reports_summed_usage_of_its_llm_calls_and_lasts_task_seconds():
    args = [*QUICK_LLM, "--dispatch-interval", "0.1", "--task-seconds", "1", "--task-llm-calls", "3",
            "--prompt-tokens", "100", "--output-tokens", "7", "--cached-share", "0.5",
            "--worker-mib", "1"]  # fmt: skip
    with launch.running(args) as gw:
        ids = submit(gw.url, 1)
        [task] = launch.wait_for(lambda: all_finished(gw.url, ids), 10, "task done")
    assert task["usage"] == {"prompt_tokens": 300, "completion_tokens": 21, "cached_tokens": 150, "calls": 3}
    assert 1.0 <= task["finished_at"] - task["started_at"] <= 1.5
    assert task["worker_pid"] and task["model"] == "sim-model" and task["tags"] == ["run-1"]


def test_task_fail_rate_one_fails_every_task():
    args = [*QUICK_LLM, "--dispatch-interval", "0.1", "--task-seconds", "0.2", "--task-fail-rate", "1",
            "--worker-mib", "0", "--task-llm-calls", "0"]  # fmt: skip
    with launch.running(args) as gw:
        ids = submit(gw.url, 2)
        tasks = launch.wait_for(lambda: all_finished(gw.url, ids), 10, "tasks to finish")
        board = inspect(gw.url)
    assert [t["status"] for t in tasks] == ["failed", "failed"] and tasks[0]["error"]
    assert board["failed"] == 2 and board["done"] == 0


def test_leak_mib_per_task_grows_gateway_rss():
    args = [*QUICK_LLM, "--dispatch-interval", "0.1", "--task-seconds", "0.2", "--leak-mib-per-task", "10",
            "--worker-mib", "0", "--task-llm-calls", "0", "--max-in-progress", "6"]  # fmt: skip
    with launch.running(args) as gw:
        warm = submit(gw.url, 1)
        launch.wait_for(lambda: all_finished(gw.url, warm), 10, "warm-up task")
        base = psutil.Process(gw.pid).memory_info().rss
        ids = submit(gw.url, 4)
        launch.wait_for(lambda: all_finished(gw.url, ids), 10, "tasks to finish")
        grown = (psutil.Process(gw.pid).memory_info().rss - base) / MIB
    assert abs(grown - 40) <= 0.1 * 40, grown


def test_archive_stops_a_running_task_and_lists_filter_by_tag():
    args = [*QUICK_LLM, "--dispatch-interval", "0.1", "--task-seconds", "20", "--task-llm-calls", "0"]
    with launch.running(args) as gw:
        [tid] = submit(gw.url, 1, tag="mine")
        submit(gw.url, 1, tag="theirs")
        pid = launch.wait_for(
            lambda: request(gw.url, "GET", f"/v1/tasks/{tid}").json()["worker_pid"], 5, "pid"
        )
        assert request(gw.url, "DELETE", f"/v1/tasks/{tid}").json()["status"] == "archived"
        launch.wait_for(lambda: not psutil.pid_exists(pid), 5, "archived task's worker to exit")
        mine = request(gw.url, "GET", "/v1/tasks?tag=mine").json()["data"]
        assert inspect(gw.url)["archived"] == 1
    assert [t["id"] for t in mine] == [tid]


def test_detached_workers_leave_the_tree_keep_the_pattern_and_stop_with_the_gateway():
    args = [*QUICK_LLM, "--dispatch-interval", "0.1", "--task-seconds", "20", "--task-llm-calls", "0",
            "--detach-workers"]  # fmt: skip
    with launch.running(args) as gw:
        [tid] = submit(gw.url, 1)

        def reported_pid() -> int | None:
            pid = request(gw.url, "GET", f"/v1/tasks/{tid}").json()["worker_pid"]
            return pid if pid and psutil.pid_exists(pid) and psutil.Process(pid).ppid() != gw.pid else None

        pid = launch.wait_for(reported_pid, 5, "detached worker pid")
        tree = {p.pid for p in psutil.Process(gw.pid).children(recursive=True)}
        assert pid not in tree
        assert "simgateway.task_worker" in " ".join(psutil.Process(pid).cmdline())
    launch.wait_for(lambda: not psutil.pid_exists(pid), 5, "detached worker to stop with the gateway")


def test_task_helper_s_runs_a_short_child_of_the_gateway_beside_each_worker():
    """--task-helper-s 1: one helper per task, a child of the gateway that is not the task's worker,
    gone (reaped, no zombie) about a second later while the worker runs on."""
    args = [*QUICK_LLM, "--dispatch-interval", "0.1", "--task-seconds", "20", "--task-llm-calls", "0",
            "--worker-mib", "0", "--task-helper-s", "1"]  # fmt: skip
    with launch.running(args) as gw:
        [tid] = submit(gw.url, 1)
        worker = launch.wait_for(
            lambda: request(gw.url, "GET", f"/v1/tasks/{tid}").json()["worker_pid"], 5, "pid"
        )

        def helper() -> psutil.Process | None:
            others = [p for p in psutil.Process(gw.pid).children() if p.pid != worker]
            return others[0] if others else None

        found = launch.wait_for(helper, 5, "the task's helper")
        assert "time.sleep" in " ".join(found.cmdline())
        launch.wait_for(lambda: helper() is None, 5, "the helper to end and be reaped")
        lived = time.time() - found.create_time()
        assert psutil.pid_exists(worker) and 0.9 <= lived <= 5, lived
