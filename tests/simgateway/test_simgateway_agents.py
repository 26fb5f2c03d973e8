"""Agent sessions read back from outside: memory per agent, first-agent cost, workers, faults."""

from __future__ import annotations

import signal

import psutil
import pytest

from simgateway import launch
from simgateway.client import request

pytestmark = pytest.mark.e2e

MIB = 1024 * 1024
FAST = ["--agent-startup-ms", "0"]


def rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def create(url: str, n: int = 1) -> list[dict]:
    replies = [request(url, "POST", "/v1/agents", {"run_id": "t"}) for _ in range(n)]
    assert all(r.status == 201 for r in replies), [r.body for r in replies]
    return [r.json() for r in replies]


def test_inprocess_rss_grows_by_agent_mib_per_agent_within_5pct_and_first_agent_once_within_10pct():
    with launch.running([*FAST, "--agent-mib", "4", "--first-agent-mib", "100"]) as gw:
        create(gw.url, 2)  # warm the request path (allocator, handlers) before the baseline
        base = rss(gw.pid)
        create(gw.url, 20)
        per_agent = (rss(gw.pid) - base) / 20 / MIB
    with launch.running([*FAST, "--agent-mib", "4", "--first-agent-mib", "100"]) as gw:
        request(gw.url, "POST", "/v1/chat/completions", {"messages": []})  # warm without an agent
        before = rss(gw.pid)
        create(gw.url, 1)
        first = (rss(gw.pid) - before) / MIB - 4
    assert abs(per_agent - 4) <= 0.05 * 4, per_agent
    assert abs(first - 100) <= 10, first


def test_delete_frees_agent_memory_except_retained_mib_per_closed():
    with launch.running(
        [*FAST, "--agent-mib", "8", "--first-agent-mib", "0", "--retain-mib-per-closed", "2"]
    ) as gw:
        create(gw.url, 2)
        base = rss(gw.pid)
        agents = create(gw.url, 10)
        for a in agents:
            assert request(gw.url, "DELETE", f"/v1/agents/{a['id']}").json()["status"] == "closed"
        retained = (rss(gw.pid) - base) / 10 / MIB
        listed = request(gw.url, "GET", "/v1/agents?run_id=t&status=closed").json()["data"]
    assert abs(retained - 2) <= 0.1 * 2, retained
    assert len(listed) == 10


def test_agent_startup_ms_sets_ready_time():
    with launch.running(["--agent-startup-ms", "150", "--agent-mib", "0", "--first-agent-mib", "0"]) as gw:
        agent = create(gw.url)[0]
    assert 0.150 <= agent["ready_at"] - agent["created_at"] <= 0.150 + 0.05
    assert agent["status"] == "ready" and agent["run_id"] == "t" and agent["pid"] == gw.pid


def test_fail_agent_at_k_fails_the_kth_create_and_every_later_one():
    with launch.running([*FAST, "--fail-agent-at", "3", "--first-agent-mib", "0"]) as gw:
        codes = [request(gw.url, "POST", "/v1/agents", {}).status for _ in range(4)]
        error = request(gw.url, "POST", "/v1/agents", {}).json()["error"]
    assert codes == [201, 201, 500, 500]
    assert "start-up failed" in error


def test_prompt_answers_one_mock_reply_with_usage():
    with launch.running([*FAST, "--ttft-ms", "5", "--itl-ms", "1", "--output-tokens", "3"]) as gw:
        agent = create(gw.url)[0]
        reply = request(gw.url, "POST", f"/v1/agents/{agent['id']}/prompt", {"input": "abcdefgh"}).json()
    assert reply["output"] == "lorem ipsum dolor"
    assert reply["usage"]["prompt_tokens"] == 2 and reply["usage"]["completion_tokens"] == 3


def test_process_mode_workers_exist_and_die_on_delete_and_on_gateway_sigterm():
    with launch.running(
        [*FAST, "--agent-mode", "process", "--agent-mib", "4", "--first-agent-mib", "0"]
    ) as gw:
        agents = create(gw.url, 3)
        pids = {a["pid"] for a in agents}
        children = {p.pid for p in psutil.Process(gw.pid).children()}
        assert pids == children and gw.pid not in pids
        request(gw.url, "DELETE", f"/v1/agents/{agents[0]['id']}")
        launch.wait_for(lambda: not psutil.pid_exists(agents[0]["pid"]), 5, "worker to exit on DELETE")
        gw.proc.send_signal(signal.SIGTERM)
        assert gw.proc.wait(10) == 0
        launch.wait_for(lambda: not any(psutil.pid_exists(p) for p in pids), 5, "workers to die with gateway")


def test_process_mode_workers_die_when_gateway_is_killed():
    with launch.running(
        [*FAST, "--agent-mode", "process", "--agent-mib", "1", "--first-agent-mib", "0"]
    ) as gw:
        pids = [a["pid"] for a in create(gw.url, 2)]
        assert len(pids) == 2 and all(psutil.pid_exists(p) for p in pids)  # alive before the kill
        gw.proc.send_signal(signal.SIGKILL)
        gw.proc.wait(10)
        launch.wait_for(lambda: not any(psutil.pid_exists(p) for p in pids), 5, "parent-death signal")


def tree_sums(pid: int) -> tuple[int, int]:
    procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    infos = [p.memory_full_info() for p in procs]
    return sum(i.rss for i in infos), sum(i.pss for i in infos)


def test_summed_rss_overcounts_shared_mib_in_every_forked_worker_where_pss_does_not():
    args = [
        *FAST,
        "--agent-mode",
        "process",
        "--shared-mib",
        "64",
        "--agent-mib",
        "4",
        "--first-agent-mib",
        "0",
    ]
    with launch.running(args) as gw:
        rss0, pss0 = tree_sums(gw.pid)
        create(gw.url, 4)
        rss1, pss1 = tree_sums(gw.pid)
    # each of 4 workers maps the 64 MiB shared block: RSS counts it 4 more times, PSS splits it
    assert (rss1 - rss0) / MIB >= 4 * 64 + 4 * 4
    # PSS grows by the workers' own memory plus Python's copy-on-write overhead per fork (< 4 MiB each)
    assert 4 * 4 <= (pss1 - pss0) / MIB <= 4 * (4 + 4), (pss1 - pss0) / MIB
