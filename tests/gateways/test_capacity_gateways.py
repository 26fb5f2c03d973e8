"""Capacity and churn against real gateways on loopback (an ACP agent, an a2a-sdk server, a LangGraph dev
server, Hermes Agent on the simulator's mock LLM), each through its preset's session protocol: a marginal
MiB per agent with R², and cleanup verified by the server's own count before and after. Short runs
(--max-agents, a few churn cycles).
"""

from __future__ import annotations

import shutil
import sys
import uuid
from pathlib import Path

import httpx
import pandas as pd
import psutil
import pytest

from agents.presets import preset
from analysis import capacity as cap
from analysis import churn as churn_study
from contract import exit_codes, schema
from tests.gateways.harness import (
    HERMES,
    HERMES_KEY,
    free_port,
    hermes_gateway,
    installed,
    running_server,
)
from tests.locust_runs import run_locust
from tests.paths import TEST_GATEWAYS

pytestmark = [pytest.mark.gateways, pytest.mark.e2e]
AGENTS = "12"
CHURN = ["--load-profile", "churn", "--churn-cycles", "4", "--churn-batch", "3"]


def capacity(run: Path, *args: str) -> tuple[cap.CapacityResult, pd.Series]:
    done = run_locust(run, "--load-profile", "capacity", "--max-agents", AGENTS, *args, timeout=300)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    result = cap.capacity_result(pd.read_csv(run / schema.CAPACITY_CSV))
    assert result.stop_reason == schema.STOP_CAP and result.agents_ready == int(AGENTS), result.notes
    assert result.fit is not None  # a marginal with its R² (the figures are in docs/capacity.md)
    print(
        f"{run.name}: {result.marginal_mib:.3f} MiB/agent, R² {result.r2:.3f}, first {result.first_agent_mib}"
    )
    return result, pd.read_csv(run / schema.AGENTS_CSV)["event"].value_counts()


def churn(run: Path, *args: str) -> churn_study.ChurnResult:
    done = run_locust(run, *CHURN, *args, timeout=300)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    result = churn_study.churn_result(pd.read_csv(run / schema.CAPACITY_CSV))
    assert result.sessions_closed == 12, result
    print(f"{run.name}: {result.verdict}")
    return result


# ---- ACP: one agent process per session, and sessions in one process --------------------------------
def acp_command(tag: str, count_file: Path | None = None) -> str:
    extra = f" --count-file {count_file}" if count_file else ""
    return f"{sys.executable} {TEST_GATEWAYS / 'acp_agent.py'} --mib 8 --session-mib 2 --tag {tag}{extra}"


def tagged(tag: str) -> list[psutil.Process]:
    return [
        p for p in psutil.process_iter(["cmdline"]) if f"--tag {tag}" in " ".join(p.info["cmdline"] or [])
    ]


def test_acp_process_per_session_capacity_and_churn(tmp_path):
    tag = uuid.uuid4().hex[:8]
    result, events = capacity(tmp_path / "acp-cap", "--gateway", "acp", "--acp-command", acp_command(tag))
    assert result.max_procs == int(AGENTS) and result.marginal_mib > 8  # each process: interpreter + 8 MiB
    assert events["closed"] == events["created"] == int(AGENTS)
    churn(tmp_path / "acp-churn", "--gateway", "acp", "--acp-command", acp_command(tag))
    assert tagged(tag) == []  # the OS's own count: no agent process left


def test_acp_sessions_in_one_process_capacity_and_churn(tmp_path):
    count = tmp_path / "open-sessions"
    command = acp_command(uuid.uuid4().hex[:8], count)
    args = ["--gateway", "acp", "--acp-command", command, "--acp-sessions", "shared"]
    result, events = capacity(tmp_path / "acp-shared-cap", *args)
    assert result.marginal_mib == pytest.approx(2.0, rel=0.10) and result.r2 >= 0.95
    assert events["closed"] == events["created"] == int(AGENTS)
    assert count.read_text() == "0"  # the agent's own count after the run closed its sessions
    churn(tmp_path / "acp-shared-churn", *args)
    assert count.read_text() == "0"


# ---- A2A: a context and a working task per idle agent --------------------------------------------------
def a2a_working(url: str) -> int:
    body = {"jsonrpc": "2.0", "id": "1", "method": "ListTasks", "params": {}}
    reply = httpx.post(url + "/", json=body, headers={"A2A-Version": "1.0"}, timeout=10).json()
    tasks = (reply.get("result") or {}).get("tasks") or []
    return sum(1 for t in tasks if (t.get("status") or {}).get("state") == "TASK_STATE_WORKING")


@pytest.mark.skipif(
    not installed("a2a"), reason="a2a-sdk[http-server] not installed (requirements-gateways.txt)"
)
def test_a2a_capacity_and_churn(tmp_path):
    port = free_port()
    command = [sys.executable, str(TEST_GATEWAYS / "a2a_server.py"), "--port", str(port), "--work-s", "3600"]
    with running_server(command, "/health", port) as url:
        pid = [str(p.pid) for p in tagged_port(port)]
        assert a2a_working(url) == 0
        args = ["--gateway", "a2a", "--host", url, "--target-pid", pid[0]]
        capacity(tmp_path / "a2a-cap", *args)
        assert a2a_working(url) == 0  # every task the run opened was cancelled
        churn(tmp_path / "a2a-churn", *args)
        assert a2a_working(url) == 0


def tagged_port(port: int) -> list[psutil.Process]:
    return [
        p for p in psutil.process_iter(["cmdline"]) if f"--port {port}" in " ".join(p.info["cmdline"] or [])
    ]


# ---- LangGraph dev server: a thread with a first run per idle agent -------------------------------------
def langgraph_threads(url: str, run_id: str) -> int:
    body = {"metadata": {"loadkit_run": run_id}, "limit": 1000}
    return len(httpx.post(f"{url}/threads/search", json=body, timeout=10).json())


@pytest.mark.skipif(not installed("langgraph_api"), reason="langgraph-cli[inmem] not installed")
def test_langgraph_capacity_and_churn(tmp_path):
    app = tmp_path / "app"
    shutil.copytree(TEST_GATEWAYS / "langgraph_app", app)
    port = free_port()
    command = [
        shutil.which("langgraph") or "langgraph",
        "dev",
        "--port",
        str(port),
        "--no-browser",
        "--no-reload",
    ]
    with running_server(command, preset("langgraph").health_path, port, timeout_s=90, cwd=app) as url:
        pid = str(tagged_port(port)[0].pid)
        # no --assistant-id: the driver finds the test graph's assistant as the load agent does
        base = ["--gateway", "langgraph", "--host", url, "--target-pid", pid]
        capacity(tmp_path / "lg-cap", *base, "--run-id", "lg-cap")
        runs = pd.read_csv(tmp_path / "lg-cap" / schema.REQUESTS_CSV)
        assert (runs["operation"] == "assistant.search").sum() == 1  # found once, at start
        assert runs.loc[runs["operation"] == "session.first_run", "ok"].all()  # its runs were accepted
        assert langgraph_threads(url, "lg-cap") == 0  # the server's own count: every thread deleted
        churn(tmp_path / "lg-churn", *base, "--run-id", "lg-churn")
        assert langgraph_threads(url, "lg-churn") == 0


# ---- Hermes Agent: a session row and a first chat turn per idle agent -----------------------------------
def hermes_sessions(url: str, run_id: str) -> int:
    """The server's own count of the run's sessions (their ids carry the run id), read page by page."""
    count, offset, more = 0, 0, True
    while more:
        page = httpx.get(
            f"{url}/api/sessions",
            params={"limit": 200, "offset": offset},
            headers={"Authorization": f"Bearer {HERMES_KEY}"},
            timeout=10,
        ).json()
        count += sum(1 for s in page["data"] if run_id in s["id"])
        offset, more = offset + len(page["data"]), page["has_more"]
    return count


@pytest.mark.skipif(not HERMES, reason="no hermes executable (set LOADKIT_HERMES_BIN; see docs/gateways.md)")
def test_hermes_capacity_and_churn(simulator, tmp_path, monkeypatch):
    llm = simulator("--ttft-ms", "5", "--itl-ms", "1", "--output-tokens", "4")
    with hermes_gateway(llm.url, tmp_path / "hermes-home", monkeypatch) as (url, pid):
        base = ["--gateway", "hermes", "--host", url, "--target-pid", str(pid)]
        assert hermes_sessions(url, "hm-") == 0
        _, events = capacity(tmp_path / "hm-cap", *base, "--run-id", "hm-cap")
        assert events["closed"] == events["created"] == int(AGENTS)
        ids = pd.read_csv(tmp_path / "hm-cap" / schema.AGENTS_CSV)["session_id"]
        assert ids.str.contains("hm-cap").all()  # so the count below sees the run's sessions
        assert hermes_sessions(url, "hm-cap") == 0  # the server's own count: every session deleted
        churn(tmp_path / "hm-churn", *base, "--run-id", "hm-churn")
        assert hermes_sessions(url, "hm-churn") == 0
