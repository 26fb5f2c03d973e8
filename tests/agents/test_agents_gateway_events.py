"""A gateway's reports of its own tool runs, as each dialect spells them: Hermes Agent 0.19's chat progress
and runs events (its api_server.py), the Responses API's output items (Hermes' /v1/responses, OpenAI's
hosted tools), A2A status messages with ADK's tool-result data parts. One count per tool call run, none
for any other event; and a Responses stream of Hermes' shape read whole: its calls are not the client's."""

from __future__ import annotations

import json

import httpx
import pytest

from agents.gateways.gateway_events import gateway_tool_runs
from agents.gateways.responses import read_body, read_stream
from agents.wire.reading import BoundedBody, ReadBounds
from agents.wire.sse import StreamTiming
from contract.records import RequestRecord


def a2a_status(*parts: dict) -> dict:
    return {"taskId": "t", "status": {"state": "TASK_STATE_WORKING", "message": {"parts": list(parts)}}}


CALL = {"data": {"id": "c1", "name": "todo", "args": {}}, "metadata": {"adk_type": "function_call"}}
RESULT = {"data": {"id": "c1", "name": "todo", "response": {}}, "metadata": {"adk_type": "function_response"}}
DONE = "response.output_item.done"


@pytest.mark.parametrize(
    ("kind", "data", "ran"),
    [
        ("hermes.tool.progress", {"tool": "todo", "toolCallId": "c1", "status": "running"}, ("c1",)),
        ("hermes.tool.progress", {"tool": "todo", "toolCallId": "c1", "status": "completed"}, ()),
        ("tool.started", {"event": "tool.started", "tool": "todo"}, ("",)),
        (None, {"event": "tool.started", "tool": "todo"}, ("",)),  # a runs event named in its data only
        ("tool.completed", {"event": "tool.completed", "tool": "todo"}, ()),
        (None, {"choices": [{"delta": {"content": "hi"}}]}, ()),
        ("hermes.tool.progress", "not an object", ()),
        (DONE, {"item": {"type": "function_call_output", "call_id": "c1", "output": []}}, ("c1",)),
        (DONE, {"item": {"type": "function_call", "call_id": "c1", "arguments": "{}"}}, ()),
        (DONE, {"item": {"type": "mcp_call", "id": "mcp_1", "name": "search"}}, ("",)),
        ("response.output_item.added", {"item": {"type": "function_call_output", "call_id": "c1"}}, ()),
        ("a2a.status-update", a2a_status(CALL, RESULT, {"text": "thinking"}), ("c1",)),
        (
            "a2a.status-update",
            a2a_status({**RESULT, "kind": "data", "metadata": {"type": "function_response"}}),
            ("c1",),
        ),
        ("a2a.status-update", {"status": {"state": "working"}}, ()),
        ("a2a.status-update", {"status": {"message": {"parts": "garbage"}}}, ()),
    ],
)
def test_one_count_per_tool_the_gateway_ran(kind, data, ran):
    assert gateway_tool_runs(kind, data) == ran


def event(kind: str, **data) -> str:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n"


def hermes_tool(n: int) -> str:
    """One tool run as Hermes 0.19 streams it on /v1/responses: the call added, done, then its output."""
    call = {
        "id": f"fc_{n}",
        "type": "function_call",
        "name": "todo",
        "call_id": f"call_{n}",
        "arguments": "{}",
    }
    output = {"id": f"fco_{n}", "type": "function_call_output", "call_id": f"call_{n}", "output": []}
    added = event("response.output_item.added", item={**call, "status": "in_progress"})
    return (
        added
        + event(DONE, item=call)
        + event("response.output_item.added", item=output)
        + event(DONE, item=output)
    )


def test_a_stream_of_calls_the_gateway_ran_leaves_the_client_none_and_times_its_text():
    text = event("response.output_text.delta", delta="Done")
    completed = {"id": "resp_1", "usage": {"input_tokens": 9, "output_tokens": 3}}
    wire = hermes_tool(1) + hermes_tool(2) + text + event("response.completed", response=completed)
    body = BoundedBody(httpx.Response(200, content=wire.encode()), ReadBounds(30.0, 1 << 20, 1 << 16))
    record = RequestRecord(ts=0.0, agent_id="a", operation="responses.stream")
    calls = read_stream(body, {}, record, StreamTiming(0.0, []))
    assert calls == [] and record.ok, record.error
    assert (record.tool_calls, record.first_token_kind, record.chunks) == (2, "content", 1)


def test_an_unstreamed_output_of_calls_with_their_outputs_leaves_the_client_only_the_unanswered():
    output = [
        {"type": "function_call", "call_id": "c1", "name": "todo", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "ok"},
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
        {"type": "function_call", "call_id": "c2", "name": "todo", "arguments": "{}"},
    ]
    record = RequestRecord(ts=0.0, agent_id="a", operation="responses")
    calls = read_body({"status": "completed", "output": output}, {}, record)
    assert [c.call_id for c in calls] == ["c2"] and record.tool_calls == 3
