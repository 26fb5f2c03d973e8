"""The MCP client as the specification is written, without a server process (httpx's MockTransport): SSE
per the SSE standard (a priming event with an id and empty data, comments, multi-line data, `retry:`),
a stream resumed with Last-Event-ID after it ended early, the protocol revision offered and the one the
server answers kept, a failed initialize closing the session it opened, the answers MCP ignores read
within --max-response-bytes; and the tool mix safe by default by the tools' annotations, arguments made
from the input schema as a client would."""

from __future__ import annotations

import json
import random
import time

import httpx
import pytest

from agents.mcp.client import McpHttpSession, McpProtocolError
from agents.mcp.mix import ToolMix, ToolPicker, arguments_for, choose, unsafe_reason
from agents.wire.reading import ReadBounds, TooLarge
from agents.wire.sse import SseCursor, iter_sse
from contract.errors import InputError

BOUNDS = ReadBounds(5.0, 1 << 20, 1 << 16)
EVENTS = {"content-type": "text/event-stream", "mcp-session-id": "s1"}


def initialize_answer(request_id: int, version: str) -> dict:
    info = {"name": "s", "version": "1"}
    return {"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": version, "serverInfo": info}}


class ResumingServer:
    """Answers initialize with a priming event then the response (split over two data lines), and a
    tools/call with a priming event only (`retry: 200`), closing the stream; the GET that resumes it
    (Last-Event-ID) carries the response. Records what it was sent and when."""

    def __init__(self, version: str = "2025-11-25") -> None:
        self.version = version
        self.sent: list[tuple[str, dict, dict[str, str], float]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        self.sent.append((request.method, body, dict(request.headers), time.monotonic()))
        if request.method == "GET":
            assert request.headers["last-event-id"] == "e2"
            return httpx.Response(200, content=self.event("e3", self.call_result()), headers=EVENTS)
        if body.get("method") == "initialize":
            text = json.dumps(initialize_answer(body["id"], self.version))
            cut = text.index(' "id"')  # between two JSON tokens: the lines join with a newline
            split = f"id: e1\ndata: {text[:cut]}\ndata:{text[cut:]}\n\n"
            priming = ": a comment\nid: e0\nretry: 5000\ndata:\n\n"
            return httpx.Response(200, content=(priming + split).encode(), headers=EVENTS)
        if body.get("method") == "tools/call":
            return httpx.Response(200, content=b"id: e2\nretry: 200\ndata: \n\n", headers=EVENTS)
        return httpx.Response(202 if request.method == "POST" else 200)

    @staticmethod
    def event(event_id: str, message: dict) -> bytes:
        return f"event: message\nid: {event_id}\ndata: {json.dumps(message)}\n\n".encode()

    @staticmethod
    def call_result() -> dict:
        return {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "ok"}]}}


def session_on(handler, offer: str | None = None) -> McpHttpSession:
    client = httpx.Client(base_url="http://mcp.test", transport=httpx.MockTransport(handler))
    return McpHttpSession(client, "/mcp", BOUNDS, {"name": "loadkit-run", "version": "1"}, offer=offer)


def test_sse_events_are_dispatched_as_the_standard_says():
    cursor = SseCursor()
    lines = [
        ": hi",
        "id: 7",
        "retry: 300",
        "data:",
        "",
        "data: a",
        "data:b",
        "event: x",
        "",
        "data",
        "data",
        "",
    ]
    events = list(iter_sse(lines, cursor=cursor))
    assert [(e.data, e.event) for e in events] == [("a\nb", "x"), ("\n", None)]  # the priming one: none
    assert (cursor.last_id, cursor.retry_ms) == ("7", 300)


def test_a_priming_event_is_no_message_and_a_stream_ended_early_is_resumed_after_its_retry():
    server = ResumingServer()
    session = session_on(server)
    assert session.initialize().ok and session.session_id == "s1"
    answer = session.request("tools/call", {"name": "t", "arguments": {}})
    assert answer.ok and answer.result == {"content": [{"type": "text", "text": "ok"}]}
    post, get = server.sent[-2], server.sent[-1]
    assert get[0] == "GET" and get[2]["mcp-session-id"] == "s1" and get[2]["last-event-id"] == "e2"
    assert 0.19 <= get[3] - post[3] < 2.0  # the server's retry (200 ms), not the default


def test_the_newest_revision_is_offered_and_an_older_answer_kept_or_a_pinned_one_offered():
    server = ResumingServer(version="2025-03-26")
    session = session_on(server)
    session.initialize()
    assert server.sent[0][1]["params"]["protocolVersion"] == "2025-11-25"
    assert session.protocol_version == "2025-03-26"
    session.initialized()
    assert server.sent[-1][2]["mcp-protocol-version"] == "2025-03-26"
    pinned = ResumingServer(version="2025-06-18")
    session_on(pinned, offer="2025-06-18").initialize()
    assert pinned.sent[0][1]["params"]["protocolVersion"] == "2025-06-18"


def test_a_failed_initialize_closes_the_session_it_opened():
    sent: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.method)
        if request.method == "DELETE":
            return httpx.Response(200)
        return httpx.Response(200, content=b"data: {not json\n\n", headers=EVENTS)

    session = session_on(handler)
    with pytest.raises(McpProtocolError, match="not JSON-RPC"):
        session.initialize()
    session.abandon()
    assert sent == ["POST", "DELETE"] and session.session_id is None


@pytest.mark.parametrize("method", ["notifications/initialized", "DELETE"])
def test_answers_mcp_ignores_are_read_within_the_size_bound(method: str):
    huge = b"x" * (2 << 20)

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        if body.get("method") == "initialize":
            answer = initialize_answer(body["id"], "2025-11-25")
            return httpx.Response(200, json=answer, headers={"mcp-session-id": "s1"})
        return httpx.Response(202 if request.method == "POST" else 200, content=huge)

    session = session_on(handler)
    session.initialize()
    with pytest.raises(TooLarge):
        session.initialized() if method != "DELETE" else session.close()


TOOLS = [
    {"name": "read", "annotations": {"readOnlyHint": True, "openWorldHint": False}},
    {"name": "wipe", "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    {"name": "web", "annotations": {"readOnlyHint": True, "openWorldHint": True}},
    {"name": "plain"},
    {"name": "set", "annotations": {"readOnlyHint": False, "destructiveHint": False}},
]


def test_the_default_mix_takes_only_read_only_closed_world_tools_and_says_what_it_left_out():
    chosen = choose(ToolMix({}, {}), TOOLS)
    assert chosen.weights == {"read": 1.0}
    assert chosen.left_out == {
        "wipe": "destructive",
        "web": "open-world",
        "plain": "unannotated",
        "set": "not read-only",
    }
    assert "left out: wipe (destructive)" in chosen.start_line()
    assert choose(ToolMix({"wipe": 1.0}, {}), TOOLS).weights == {"wipe": 1.0}  # named: called
    assert set(choose(ToolMix({}, {}, allow_unsafe=True), TOOLS).weights) == {t["name"] for t in TOOLS}
    assert unsafe_reason({"annotations": {"readOnlyHint": True}}) is None  # open-world unsaid: not open


def test_a_mix_the_servers_lists_do_not_fit_is_input_error():
    with pytest.raises(InputError, match="lists no tool nope"):
        choose(ToolMix({"nope": 1.0}, {}), TOOLS)
    with pytest.raises(InputError, match="no tool to call.*--mcp-allow-unsafe-tools"):
        choose(ToolMix({}, {}), TOOLS[1:])
    with pytest.raises(InputError, match="resources/list lists nothing"):
        choose(ToolMix({"mcp.resources_read": 1.0}, {}), TOOLS, {"resources/list": []})
    needs = [{"name": "read", "inputSchema": {"required": ["q"]}, "annotations": TOOLS[0]["annotations"]}]
    with pytest.raises(InputError, match="lacks q"):
        choose(ToolMix({}, {"read": [{"x": 1}]}), needs)


def test_operations_in_the_mix_draw_from_the_servers_lists():
    listed = {
        "resources/list": [{"uri": "mem://a"}],
        "prompts/list": [{"name": "p", "arguments": [{"name": "topic", "required": True}, {"name": "x"}]}],
    }
    mix = ToolMix({"mcp.resources_read": 1.0, "mcp.prompts_get": 1.0, "mcp.ping": 1.0}, {})
    assert mix.lists_needed() == ["resources/list", "prompts/list"]
    picker = ToolPicker(mix, TOOLS, random.Random(3), "t", listed)
    drawn = dict(picker.next() for _ in range(60))
    assert drawn["mcp.resources_read"] == {"uri": "mem://a"} and drawn["mcp.ping"] == {}
    assert drawn["mcp.prompts_get"]["name"] == "p" and set(drawn["mcp.prompts_get"]["arguments"]) == {"topic"}


def test_arguments_are_made_from_the_schema_as_a_client_would():
    props = {
        "tz": {"type": "string", "default": "UTC"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "city": {"type": "string", "examples": ["Paris"]},
        "kind": {"const": "k"},
        "when": {"type": "string", "format": "date-time"},
        "to": {"type": "string", "format": "email"},
        "n": {"type": "integer", "minimum": 5, "maximum": 9},
        "small": {"type": "number", "maximum": 0.5},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        "optional": {"type": "string"},
    }
    schema = {"properties": props, "required": [p for p in props if p != "optional"]}
    assert arguments_for(schema, "t") == {
        "tz": "UTC",
        "unit": "c",
        "city": "Paris",
        "kind": "k",
        "when": "2026-01-01T00:00:00Z",
        "to": "loadkit@example.com",
        "n": 5,
        "small": 0.5,
        "tags": ["t"],
        "either": 1,
    }
