"""The kit's MCP client and tool mix without a server process: answers served by httpx's MockTransport
(JSON, SSE with notifications and a server request, a wrong version, not JSON-RPC), the tool mix's
weights and the arguments made from a schema, and the MCP URL kept on --host's origin."""

from __future__ import annotations

import contextlib
import json
import random

import httpx
import pytest

from agents.mcp.agent import fill_answer, mcp_request
from agents.mcp.client import Answer, McpHttpSession, McpProtocolError
from agents.mcp.mix import ToolMix, ToolPicker, arguments_for, parse_mix
from agents.wire.reading import ReadBounds
from agents.wire.target_origin import OffTargetError, path_on
from contract.errors import InputError
from contract.records import RequestRecord
from contract.schema import ERROR_RPC, ERROR_TOOL
from kit.input_checks import on_target

BOUNDS = ReadBounds(5.0, 1 << 20, 1 << 16)
SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}, "n": {"type": "integer"}}}


def sse(*messages: dict) -> bytes:
    return b"".join(b"event: message\ndata: " + json.dumps(m).encode() + b"\n\n" for m in messages)


class Server:
    """A scripted MCP server: answers each POST with the next of `answers`, records what it was sent."""

    def __init__(self, *answers: httpx.Response) -> None:
        self.answers = list(answers)
        self.sent: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        self.sent.append(
            {"method": request.method, "body": body, "session": request.headers.get("mcp-session-id")}
        )
        if request.method == "DELETE" or "id" not in body or "method" not in body:
            return httpx.Response(202 if request.method == "POST" else 200)
        return self.answers.pop(0)


def session_on(server: Server) -> McpHttpSession:
    client = httpx.Client(base_url="http://mcp.test", transport=httpx.MockTransport(server))
    return McpHttpSession(client, "/mcp", BOUNDS, {"name": "loadkit-run", "version": "1"})


def initialized(version: str = "2025-11-25") -> httpx.Response:
    result = {"protocolVersion": version, "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}
    return httpx.Response(
        200, json={"jsonrpc": "2.0", "id": 1, "result": result}, headers={"mcp-session-id": "s1"}
    )


def test_a_session_keeps_its_id_and_version_and_reads_an_sse_answer_past_notifications_and_requests():
    stream = sse(
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 1},
        },
        {"jsonrpc": "2.0", "id": 7, "method": "roots/list"},
        {"jsonrpc": "2.0", "id": 8, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "hi"}]}},
    )
    server = Server(
        initialized(), httpx.Response(200, content=stream, headers={"content-type": "text/event-stream"})
    )
    session = session_on(server)
    assert session.initialize().ok
    session.initialized()
    answer = session.request("tools/call", {"name": "search", "arguments": {}})
    assert answer.ok and answer.notifications == 1 and answer.refused == 1 and answer.size == len(stream)
    replies = [s["body"] for s in server.sent if "id" in s["body"] and "method" not in s["body"]]
    assert replies[0]["id"] == 7 and replies[0]["error"]["code"] == -32601  # refused, never left waiting
    assert replies[1] == {"jsonrpc": "2.0", "id": 8, "result": {}}  # a ping is answered
    assert server.sent[0]["body"]["params"]["clientInfo"]["name"] == "loadkit-run"
    assert all(s["session"] == "s1" for s in server.sent[1:])
    assert session.close().status_code == 200 and server.sent[-1]["method"] == "DELETE"


def test_a_wrong_protocol_version_and_an_answer_that_is_not_json_rpc_are_protocol_errors():
    with pytest.raises(McpProtocolError, match="protocol version '1999-01-01'"):
        session_on(Server(initialized("1999-01-01"))).initialize()
    with pytest.raises(McpProtocolError, match="not a JSON-RPC 2.0 message"):
        session_on(Server(httpx.Response(200, json={"jsonrpc": "1.0"}))).initialize()
    with pytest.raises(McpProtocolError, match="ended without the response to request 1"):
        empty = httpx.Response(200, content=b": nothing\n\n", headers={"content-type": "text/event-stream"})
        session_on(Server(empty)).initialize()


def test_rows_fail_on_http_errors_rpc_errors_and_is_error_results():
    def row(answer: Answer) -> RequestRecord:
        record = RequestRecord(ts=0.0, agent_id="a", operation="mcp.tools_call")
        fill_answer(record, answer)
        return record

    rpc = row(Answer(200, error_code=-32603, error="boom", size=80))
    assert (rpc.ok, rpc.error_kind, rpc.rpc_error_code, rpc.response_bytes) == (False, ERROR_RPC, -32603, 80)
    tool = row(Answer(200, result={"isError": True, "content": [{"type": "text", "text": "no such file"}]}))
    assert (tool.ok, tool.error_kind, tool.error) == (False, ERROR_TOOL, "no such file")
    assert row(Answer(503, error="busy")).error_kind == "http_5xx" and row(Answer(200, result={})).ok


def test_the_tool_mix_draws_by_weight_and_makes_arguments_from_the_schema():
    tools = [{"name": n, "inputSchema": {**SCHEMA, "required": ["query", "n"]}} for n in ("a", "b", "c")]
    picker = ToolPicker(ToolMix(parse_mix("a=3,b=1"), {}), tools, random.Random(1), "[agent 1]")
    drawn = [picker.next() for _ in range(4000)]
    share = sum(name == "a" for name, _ in drawn) / len(drawn)
    assert 0.72 <= share <= 0.78 and {name for name, _ in drawn} == {"a", "b"}  # c: not in the mix
    assert drawn[0][1] == {"query": "[agent 1] call 1", "n": 1}
    examples = ToolPicker(
        ToolMix({"a": 1.0}, {"a": [{"query": "x", "n": 2}]}), tools[:1], random.Random(1), "t"
    )
    assert examples.next() == ("a", {"query": "x", "n": 2})
    assert arguments_for({"required": ["k"], "properties": {"k": {"enum": ["red", "blue"]}}}, "t") == {
        "k": "red"
    }
    with pytest.raises(InputError, match="lists no tool z"):
        ToolPicker(ToolMix({"z": 1.0}, {}), tools, random.Random(1), "t")
    with pytest.raises(InputError, match="NAME=WEIGHT"):
        parse_mix("a=fast")


def test_an_mcp_url_stays_on_the_hosts_origin():
    assert path_on("/servers/1/mcp", "http://127.0.0.1:4444") == "/servers/1/mcp"
    assert path_on("http://127.0.0.1:4444/mcp?x=1", "http://127.0.0.1:4444") == "/mcp?x=1"
    with pytest.raises(OffTargetError, match="not on the target"):
        path_on("http://127.0.0.1:4445/mcp", "http://127.0.0.1:4444")
    on_target("--mcp-url", "/mcp", None)
    with pytest.raises(InputError, match="give a path"):
        on_target("--mcp-url", "http://127.0.0.1:1/mcp", None)
    with pytest.raises(InputError, match="not on the target"):
        on_target("--mcp-url", "http://evil.example/mcp", "http://127.0.0.1:4444")


class RowAgent:
    """What mcp_request needs of an agent: its id, a cut guard, and the rows it reports."""

    agent_id = "a1"

    def __init__(self) -> None:
        self.rows: list[RequestRecord] = []

    def reported_if_cut(self, _record, _started):
        return contextlib.nullcontext()

    def report(self, record: RequestRecord) -> None:
        self.rows.append(record)


def test_resources_read_prompts_get_and_ping_are_rows_of_their_own_operation():
    text = {"jsonrpc": "2.0", "id": 2, "result": {"contents": [{"uri": "u", "text": "x"}]}}
    answers = [httpx.Response(200, json={**text, "id": n}) for n in (2, 3, 4)]
    session = session_on(Server(initialized(), *answers))
    session.initialize()
    agent = RowAgent()
    for method, params in (("resources/read", {"uri": "u"}), ("prompts/get", {"name": "p"}), ("ping", None)):
        assert mcp_request(agent, session, method, params) is not None  # type: ignore[arg-type]
    assert [r.operation for r in agent.rows] == ["mcp.resources_read", "mcp.prompts_get", "mcp.ping"]
    assert all(r.ok and r.session_id == "s1" and r.response_bytes for r in agent.rows)
