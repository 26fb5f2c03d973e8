"""The MCP section from rows with known answers: per-tool percentiles and rates, sessions opened, closed
and left open, the tool share of a task; an agent-loop task's MCP rows are tool time, never steps."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.agent_loop import loop_steps
from analysis.mcp import mcp_section, per_tool, sessions, tool_share
from analysis.model import RunData
from contract.schema import ERROR_RPC, ERROR_TOOL, MCP_OP


def row(operation: str, latency: float, ok: int = 1, **fields) -> dict:
    return {"operation": operation, "latency_ms": latency, "ok": ok, "response_bytes": 300.0, **fields}


def requests() -> pd.DataFrame:
    calls = [row(MCP_OP.tools_call, float(ms), tool_name="search", session_id="s1") for ms in range(1, 101)]
    calls += [row(MCP_OP.tools_call, 10.0, 0, tool_name="fetch", error_kind=ERROR_RPC, session_id="s2")]
    calls += [row(MCP_OP.tools_call, 10.0, 0, tool_name="fetch", error_kind=ERROR_TOOL, session_id="s2")]
    calls += [row(MCP_OP.tools_call, 10.0, tool_name="fetch", session_id="s2", task_id="t1", step=1.0)]
    opens = [row(MCP_OP.initialize, 5.0, session_id=s) for s in ("s1", "s2")]
    opens += [row(MCP_OP.initialize, 5.0, 0, error_kind="timeout")]
    model = [row("chat.stream", 100.0, task_id="t1", step=s) for s in (1.0, 2.0)]
    return pd.DataFrame([*opens, *calls, row(MCP_OP.close, 3.0, session_id="s1"), *model])


def run() -> RunData:
    tasks = pd.DataFrame([{"task_id": "t1", "total_ms": 400.0, "tool_ms": 100.0, "steps": 2.0}])
    return RunData(Path("."), {}, requests=requests(), tasks=tasks)


def test_per_tool_latency_percentiles_and_error_rates():
    table = per_tool(requests())
    assert table.loc["search", "n"] == 100 and table.loc["search", "p50"] == pytest.approx(50.5)
    assert table.loc["search", "p99"] == pytest.approx(99.01) and table.loc["search", "failed_pct"] == 0
    fetch = table.loc["fetch"]
    assert fetch["n"] == 3 and fetch["rpc_error_pct"] == pytest.approx(100 / 3)
    assert fetch["is_error_pct"] == pytest.approx(100 / 3) and fetch["failed_pct"] == pytest.approx(200 / 3)


def test_sessions_opened_failed_closed_and_left_open():
    counts = sessions(requests())["sessions"].to_dict()
    assert counts == {"opened": 2, "failed to open": 1, "closed": 1, "left open": 1}


def test_the_tool_share_of_a_task_and_mcp_rows_are_not_loop_steps():
    share = tool_share(run(), requests())
    assert share is not None and share["overall_pct"].iloc[0] == pytest.approx(25.0)
    assert list(loop_steps(run())["operation"]) == ["chat.stream", "chat.stream"]


def test_the_section_appears_only_with_mcp_rows():
    section = mcp_section(run())
    assert section is not None and section.title == "MCP"
    assert [t for t, _ in section.tables][:3] == [
        "tools/call per tool (ms)",
        "MCP requests by operation (ms)",
        "MCP sessions",
    ]
    plain = RunData(Path("."), {}, requests=pd.DataFrame([row("chat.stream", 1.0)]))
    assert mcp_section(plain) is None
