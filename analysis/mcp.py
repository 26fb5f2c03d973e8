"""The report's MCP section: tools/call latency per tool (p50/p95/p99 with n), JSON-RPC error and isError
rates, every MCP operation's latency, sessions opened, closed, failed and left open, and the share of an
agent-loop task's time its MCP tools took.

Pure: requests.csv and tasks.csv rows in, tables and notes out; nothing is read from files here.
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData, Section
from analysis.stats import describe
from contract.schema import ERROR_RPC, ERROR_TOOL, MCP_OP, MCP_PREFIX, REQUEST, TASK

PERCENTILES = (50, 95, 99)


def mcp_rows(run: RunData) -> pd.DataFrame:
    """requests.csv rows of MCP requests (operation `mcp.*`)."""
    requests = run.requests
    if requests is None or requests.empty:
        return pd.DataFrame()
    return requests[requests[REQUEST.operation].astype(str).str.startswith(MCP_PREFIX)]


def _latency_rows(groups) -> pd.DataFrame:
    """Per group: latency n/p50/p95/p99/max, failed %, JSON-RPC error %, isError %, median bytes."""
    rows = {}
    for name, rows_of in groups:
        kinds = rows_of[REQUEST.error_kind]
        rows[name] = {
            **describe(rows_of[REQUEST.latency_ms], percentiles=PERCENTILES),
            "failed_pct": (rows_of[REQUEST.ok] != 1).mean() * 100,
            "rpc_error_pct": (kinds == ERROR_RPC).mean() * 100,
            "is_error_pct": (kinds == ERROR_TOOL).mean() * 100,
            "bytes_median": rows_of[REQUEST.response_bytes].median(),
        }
    return pd.DataFrame.from_dict(rows, orient="index")


def per_tool(rows: pd.DataFrame) -> pd.DataFrame:
    calls = rows[rows[REQUEST.operation] == MCP_OP.tools_call]
    table = _latency_rows(calls.groupby(calls[REQUEST.tool_name].fillna("?")))
    table.index.name = "tool"
    return table


def per_operation(rows: pd.DataFrame) -> pd.DataFrame:
    table = _latency_rows(rows.groupby(REQUEST.operation))
    table.index.name = "operation"
    return table


def sessions(rows: pd.DataFrame) -> pd.DataFrame:
    """Sessions opened (an answered initialize with a session id), failed, closed and left open."""
    init = rows[rows[REQUEST.operation] == MCP_OP.initialize]
    opened = set(init.loc[init[REQUEST.ok] == 1, REQUEST.session_id].dropna())
    close = rows[rows[REQUEST.operation] == MCP_OP.close]
    closed = set(close.loc[close[REQUEST.ok] == 1, REQUEST.session_id].dropna())
    counts = {
        "opened": len(opened),
        "failed to open": int((init[REQUEST.ok] != 1).sum()),
        "closed": len(opened & closed),
        "left open": len(opened - closed),
    }
    table = pd.DataFrame({"sessions": counts})
    table.index.name = "state"
    return table


def tool_share(run: RunData, rows: pd.DataFrame) -> pd.DataFrame | None:
    """Of agent-loop tasks whose tools were MCP calls: the share of their time in tools, per task and
    over all tasks (tasks.csv tool_ms over total_ms)."""
    tasks = run.tasks
    calls = rows[(rows[REQUEST.operation] == MCP_OP.tools_call) & rows[REQUEST.task_id].notna()]
    if tasks is None or tasks.empty or calls.empty:
        return None
    mine = tasks[tasks[TASK.task_id].isin(set(calls[REQUEST.task_id])) & (tasks[TASK.total_ms] > 0)]
    if mine.empty:
        return None
    share = mine[TASK.tool_ms] / mine[TASK.total_ms] * 100
    row = describe(share, percentiles=(50, 95))
    row["overall_pct"] = mine[TASK.tool_ms].sum() / mine[TASK.total_ms].sum() * 100
    return pd.DataFrame({"MCP tool time, % of a task": row}).T


def mcp_section(run: RunData) -> Section | None:
    """The MCP section; None when the run made no MCP request."""
    rows = mcp_rows(run)
    if rows.empty:
        return None
    section = Section("MCP")
    if (rows[REQUEST.operation] == MCP_OP.tools_call).any():
        section.tables.append(("tools/call per tool (ms)", per_tool(rows)))
    section.tables.append(("MCP requests by operation (ms)", per_operation(rows)))
    section.tables.append(("MCP sessions", sessions(rows)))
    share = tool_share(run, rows)
    if share is not None:
        section.tables.append(("time in MCP tools", share))
    section.notes.append(
        "a tools/call whose result says isError is a failed row (error kind tool_error), beside JSON-RPC "
        "errors (rpc_error, with rpc_error_code); bytes are the answer as received, SSE framing included"
    )
    return section
