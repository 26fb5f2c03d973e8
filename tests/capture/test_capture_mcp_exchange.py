"""What the recorder keeps of an MCP tools/call (capture/mcp_exchange.py): the request told by its JSON-RPC
body, the answer read from JSON or an SSE stream (notifications counted, the text capped, isError and
JSON-RPC errors kept), and its session: the model session whose answer asked that call
(capture/session_log.py). Pure: no server."""

from __future__ import annotations

import json

from capture.mcp_exchange import RESULT_CHARS, rpc_request, tool_answer_of, tool_call_of
from capture.session_log import SessionLog
from tests.capture.test_capture_exchange import passed


def rpc(message: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode()


CALL = {
    "id": 7,
    "method": "tools/call",
    "params": {"name": "lookup", "arguments": {"q": "x"}, "_meta": {"p": 1}},
}


def test_only_a_tools_call_request_is_kept_with_its_name_and_arguments_not_its_meta():
    assert tool_call_of(rpc_request(rpc(CALL)) or {}) == {
        "method": "tools/call",
        "params": {"name": "lookup", "arguments": {"q": "x"}},
    }
    assert rpc_request(rpc({"method": "tools/list", "id": 1})) is not None
    assert tool_call_of(rpc_request(rpc({"method": "tools/list", "id": 1})) or {}) is None
    assert tool_call_of({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "a"}}) is None  # no id
    assert rpc_request(b'{"model": "m", "messages": []}') is None  # a model call's body
    assert rpc_request(b'{"jsonrpc": "1.0", "method": "x"}') is None
    assert rpc_request(b'[{"jsonrpc": "2.0", "method": "x"}]') is None  # a batch is not recorded
    assert rpc_request(b"\x00binary") is None


def test_a_json_answer_is_its_text_and_is_error_and_latency():
    result = {"content": [{"type": "text", "text": "ab"}, {"type": "text", "text": "cd"}], "isError": True}
    body = rpc({"id": 7, "result": result})
    answer = tool_answer_of(7, passed([(0.0125, body)], "application/json"))
    assert answer == {
        "status": 200,
        "latency_ms": 12.5,
        "ttft_ms": None,
        "isError": True,
        "content": "abcd",
        "content_chars": 4,
    }


def test_an_sse_answer_is_read_after_its_notifications_and_a_long_text_is_capped():
    progress = rpc({"method": "notifications/progress", "params": {"progress": 1}})
    asks = rpc({"id": "s1", "method": "roots/list"})  # the server's own request on the stream
    text = "y" * (RESULT_CHARS + 10)
    answer = rpc({"id": "c-1", "result": {"content": [{"type": "text", "text": text}]}})
    stream = b"".join(b"event: message\ndata: " + m + b"\n\n" for m in (progress, asks, answer))
    cut = len(stream) - 20  # the answer's event split across chunks
    found = tool_answer_of("c-1", passed([(0.01, stream[:cut]), (0.04, stream[cut:])]))
    assert found["latency_ms"] == 40.0 and found["notifications"] == 1
    assert found["isError"] is False and found["content_chars"] == RESULT_CHARS + 10
    assert found["content"] == "y" * RESULT_CHARS


def test_a_json_rpc_error_an_http_error_and_an_answer_to_another_id():
    error = rpc({"id": 7, "error": {"code": -32602, "message": "unknown tool"}})
    assert tool_answer_of(7, passed([(0.01, error)], "application/json"))["rpc_error"] == {
        "code": -32602,
        "message": "unknown tool",
    }
    gone = passed([(0.01, b"session not found")], "text/plain")
    gone.status = 404
    assert tool_answer_of(7, gone)["error"] == "session not found"
    other = rpc({"id": 8, "result": {"content": []}})
    assert tool_answer_of(7, passed([(0.01, other)], "application/json"))["unreadable"] is True


def model_answer(*calls: tuple[str, str]) -> dict:
    tool_calls = [{"id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(calls)]
    return {"status": 200, "latency_ms": 10.0, "tool_calls": tool_calls}


def test_a_tool_call_joins_the_session_whose_model_asked_it_and_its_mcp_session_follows(tmp_path):
    log = SessionLog(tmp_path / "s.jsonl", "http://127.0.0.1:1")
    log.open()
    log.record("alpha", 100.0, "chat", {}, model_answer(("lookup", '{"q": "x", "n": 1}')))
    log.record("beta", 100.0, "chat", {}, model_answer(("docs__search", '{"q": "y"}')))
    # the same arguments in another spelling (key order, spaces); a server prefix on the model's name
    assert (
        log.session_of_tool_call({"name": "lookup", "arguments": {"n": 1, "q": "x"}}, None, "m1") == "alpha"
    )
    assert log.session_of_tool_call({"name": "search", "arguments": {"q": "y"}}, None, "m2") == "beta"
    # asked once, joined once: the next like it follows its MCP session's join
    assert (
        log.session_of_tool_call({"name": "lookup", "arguments": {"q": "x", "n": 1}}, None, "m1") == "alpha"
    )
    assert log.session_of_tool_call({"name": "other", "arguments": {}}, None, "m2") == "beta"
    unjoined = log.session_of_tool_call({"name": "lookup", "arguments": {}}, None, "m3")
    assert unjoined.startswith("mcp-") and "m3" not in unjoined
    assert log.session_of_tool_call({"name": "lookup", "arguments": {}}, "named", "m1") == "named"
    log.record("gamma", 101.0, "chat", {}, model_answer(("search", '{"q": "z"}')))
    assert log.session_of_tool_call({"name": "research", "arguments": {"q": "z"}}, None, None) != "gamma"
    assert log.session_of_tool_call({"name": "search", "arguments": {"q": "z"}}, None, None) == "gamma"
