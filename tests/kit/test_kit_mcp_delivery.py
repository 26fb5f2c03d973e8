"""A run whose work is MCP tool calls and where none succeeded is not delivered (exit 7), its reason the
first failure the rows show; one tools/call answered is enough; runs of other work are not judged so. A
stdio server started through a launcher (npx, uvx, env) is sampled by what it launches."""

from __future__ import annotations

import re

import pytest

from contract import schema
from contract.schema import AGENT, MCP_OP, REQUEST
from kit.delivery import AnsweredRows, shortfall
from kit.startup import stdio_pattern


def row(operation: str, ok: bool, error: str | None = None) -> dict:
    return {REQUEST.operation: operation, REQUEST.ok: ok, REQUEST.error: error}


def test_no_tools_call_succeeded_is_a_shortfall_naming_the_first_failure():
    rows = AnsweredRows(tool_calls=True)
    rows.on_row(
        schema.AGENTS_CSV, {AGENT.event: "failed", AGENT.error: "initialize failed (see requests.csv)"}
    )
    rows.on_row(schema.REQUESTS_CSV, row(MCP_OP.tools_call, False, "-32602 unknown tool 'nope'"))
    why = shortfall([], rows, workers_left=True)
    assert why == (
        "load not delivered: 0 tools/call succeeded (1 failed); the first failure: initialize failed "
        "(see requests.csv)"
    )
    rows.on_row(schema.REQUESTS_CSV, row(MCP_OP.tools_call, True))
    assert shortfall([], rows, workers_left=True) is None


def test_runs_whose_work_is_not_tool_calls_are_not_judged_by_them():
    rows = AnsweredRows()
    rows.on_row(schema.REQUESTS_CSV, row(MCP_OP.initialize, True))
    assert shortfall([], rows, workers_left=True) is None


@pytest.mark.parametrize(
    ("command", "pattern"),
    [
        ("npx -y @modelcontextprotocol/server-everything stdio", "server-everything"),
        (
            "env -C /srv PATH=/opt/node/bin npx -y @modelcontextprotocol/server-everything@2026.8.31",
            "server-everything",
        ),
        ("uvx --from mcp-server-time@1.0 mcp-server-time --local-timezone UTC", "mcp-server-time"),
        ("/usr/bin/python3 -m simgateway.mcp_stdio --mcp-tools a", "-m simgateway.mcp_stdio --mcp-tools a"),
    ],
)
def test_a_stdio_command_through_a_launcher_is_sampled_by_what_it_launches(command, pattern):
    assert stdio_pattern(command) == re.escape(pattern)
