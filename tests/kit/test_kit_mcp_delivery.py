"""A run whose work is MCP tool calls and where none succeeded is not delivered (exit 7), its reason the
first failure the rows show; one tools/call answered is enough; runs of other work are not judged so."""

from __future__ import annotations

from contract import schema
from contract.schema import AGENT, MCP_OP, REQUEST
from kit.delivery import AnsweredRows, shortfall


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
