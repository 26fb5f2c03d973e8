"""Capacity and churn on MCP sessions against the simulator's MCP endpoint, whose per-session memory
(`--mcp-session-mib`) is the truth read back; every session the driver opened is closed, on the server's
own count; kit.cleanup closes what a run left open."""

from __future__ import annotations

import httpx
import pandas as pd
import pytest

from agents.capacity.drivers import CapacityAgent, ChurnAgent
from analysis import capacity as cap
from contract import schema
from kit import cleanup
from lifecycle.target import free_port, start_simulator, stop_target
from tests.agents.test_capacity_driver import drive
from tests.locust_runs import wait_for

pytestmark = pytest.mark.e2e

SESSION_MIB = 4.0


@pytest.fixture
def mcp_simulator():
    port = free_port()
    knobs = f"--mcp-preload --mcp-session-mib {SESSION_MIB:g} --mcp-json-response"
    target = start_simulator(port, knobs)
    yield target
    stop_target(target)


def sessions(target) -> dict:
    return httpx.get(f"{target.url}/v1/sim/mcp").json()["sessions"]


def all_closed(target) -> None:
    wait_for(lambda: sessions(target)["open"] == 0, 2.0, "every MCP session closed on the server")


def test_capacity_on_mcp_sessions_reads_back_the_session_mib_within_5pct(mcp_simulator, tmp_path):
    frame = drive(
        CapacityAgent, mcp_simulator, tmp_path, gateway="mcp", memory_budget="300MiB", max_agents="60"
    )
    result = cap.capacity_result(frame)
    assert result.failures == 0 and result.agents_ready >= 40
    assert result.marginal_mib == pytest.approx(SESSION_MIB, rel=0.05), result.marginal_mib
    counts = sessions(mcp_simulator)
    assert counts["open"] == 0 and counts["opened"] == counts["closed"] == result.agents_ready
    methods = httpx.get(f"{mcp_simulator.url}/v1/sim/mcp").json()["methods"]
    assert methods["initialize"] == methods["notifications/initialized"] == result.agents_ready
    assert result.duplicate_session_ids == 0


def test_capacity_and_churn_over_http_sse_hold_each_session_by_its_stream_and_close_every_one(
    mcp_simulator, tmp_path
):
    over_sse = {"mcp_url": "/sse"}  # the simulator's POST there is 405: every session falls back
    for part in ("capacity", "churn"):
        (tmp_path / part).mkdir()
    frame = drive(
        CapacityAgent,
        mcp_simulator,
        tmp_path / "capacity",
        gateway="mcp",
        settings=over_sse,
        memory_budget="300MiB",
        max_agents="40",
    )
    result = cap.capacity_result(frame)
    assert result.failures == 0 and result.agents_ready == 40
    assert result.marginal_mib == pytest.approx(SESSION_MIB, rel=0.05), result.marginal_mib
    all_closed(mcp_simulator)  # the simulator sees a stream closed within DISCONNECT_POLL_S
    counts = sessions(mcp_simulator)
    assert counts["opened"] == counts["closed"] == 40
    methods = httpx.get(f"{mcp_simulator.url}/v1/sim/mcp").json()["methods"]
    assert methods["initialize"] == methods["notifications/initialized"] == 40  # each on its own stream
    drive(
        ChurnAgent,
        mcp_simulator,
        tmp_path / "churn",
        gateway="mcp",
        settings=over_sse,
        churn_cycles="3",
        churn_batch="4",
    )
    all_closed(mcp_simulator)
    counts = sessions(mcp_simulator)
    assert counts["opened"] == counts["closed"] >= 40 + 12
    methods = httpx.get(f"{mcp_simulator.url}/v1/sim/mcp").json()["methods"]
    assert methods["tools/list"] >= 12  # each churn prompt, sent on the clock's thread where its stream is


def test_kit_cleanup_closes_the_mcp_sessions_a_run_left_open(mcp_simulator, tmp_path):
    opened = []
    for _ in range(3):
        reply = httpx.post(
            f"{mcp_simulator.url}/mcp",
            headers={"Accept": "application/json, text/event-stream"},
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x"}},
            },
        )
        opened.append(reply.headers["mcp-session-id"])
    agents = pd.DataFrame(
        {"ts": [1.0] * 3, "agent_id": ["a"] * 3, "session_id": opened, "event": ["created"] * 3}
    )
    agents.reindex(columns=list(schema.AGENT_COLUMNS)).to_csv(tmp_path / schema.AGENTS_CSV, index=False)
    (tmp_path / schema.RUN_JSON).write_text('{"run_id": "mcp-run", "target": {"gateway": "mcp"}}')
    assert sessions(mcp_simulator)["open"] == 3
    code = cleanup.main([str(tmp_path), "--host", mcp_simulator.url])
    assert code == 0 and sessions(mcp_simulator)["open"] == 0
    closed = pd.read_csv(tmp_path / schema.AGENTS_CSV)
    assert (closed["event"] == "closed").sum() == 3


def test_churn_on_mcp_sessions_closes_every_session_it_opened(mcp_simulator, tmp_path):
    drive(ChurnAgent, mcp_simulator, tmp_path, gateway="mcp", churn_cycles="3", churn_batch="4")
    counts = sessions(mcp_simulator)
    assert counts["open"] == 0 and counts["opened"] == counts["closed"] >= 12
