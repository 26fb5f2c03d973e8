"""One recorded MCP tool call (Streamable HTTP): the `tools/call` the agent sent (its tool's name and
arguments) and what came back (status, latency at the recorder, isError, the result's text within a cap,
or the JSON-RPC error), read from the bytes that passed, whether the server answered JSON or an SSE stream.

An MCP request is told by its body, on any path: a JSON-RPC 2.0 request object with a `method`. Only
`tools/call` is kept; the handshake, notifications, tools/list and the rest pass through unrecorded, since a
replay opens a session of its own and needs none of them. Pure, like capture/exchange.py.
"""

from __future__ import annotations

from capture.exchange import Passed, answer_head, json_object, sse_events

TOOLS_CALL = "tools/call"
RESULT_CHARS = 2000  # of a result's text in the file: the agent's next model call carries it whole anyway


def rpc_request(body: bytes) -> dict | None:
    """The JSON-RPC 2.0 request the body holds, else None. A cheap look for "jsonrpc" comes first, so a
    body that cannot be one (an upload, a form) is never parsed."""
    if b'"jsonrpc"' not in body:
        return None
    message = json_object(body)
    if message is None or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        return None
    return message


def tool_call_of(message: dict) -> dict | None:
    """What the file keeps of a tools/call request: its method and the tool's name and arguments (not its
    `_meta`, a progress token of the agent's session); None for any other method or a notification."""
    params = message.get("params")
    if message.get("method") != TOOLS_CALL or "id" not in message or not isinstance(params, dict):
        return None
    if not isinstance(params.get("name"), str):
        return None
    arguments = params.get("arguments")
    return {"method": TOOLS_CALL, "params": {"name": params["name"], "arguments": arguments or {}}}


def tool_answer_of(request_id: object, passed: Passed) -> dict:
    """The answer's head (capture/exchange.py answer_head), then its answer to `request_id`: the result's
    isError, its text (the first RESULT_CHARS characters, `content_chars` its whole length), or the
    JSON-RPC error; the server's notifications on the stream counted."""
    out = answer_head(passed)
    if passed.status >= 400:
        return out
    messages = _messages(passed)
    answer = next((m for m in messages if m.get("id") == request_id and "method" not in m), None)
    notifications = sum(1 for m in messages if "method" in m and "id" not in m)
    if notifications:
        out["notifications"] = notifications
    if answer is None:
        out["unreadable"] = True
    elif isinstance(answer.get("error"), dict):
        error = answer["error"]
        out["rpc_error"] = {"code": error.get("code"), "message": str(error.get("message", ""))}
    else:
        out.update(_result(answer.get("result")))
    return out


def _messages(passed: Passed) -> list[dict]:
    """The JSON-RPC messages of the answer: one JSON body, or each event of an SSE stream."""
    if passed.content_type.startswith("text/event-stream"):
        found = [json_object(data) for _, _, data in sse_events(passed.chunks)]
    else:
        found = [json_object(passed.body)]
    return [m for m in found if m is not None]


def _result(result: object) -> dict:
    result = result if isinstance(result, dict) else {}
    parts = result.get("content")
    texts = [str(p.get("text", "")) for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []
    text = "".join(texts)
    return {
        "isError": result.get("isError") is True,
        "content": text[:RESULT_CHARS],
        "content_chars": len(text),
    }
