"""One recorded model call: what the agent asked (its request body, secrets removed) and what came back
(status, timing at the recorder, usage, the answer's text and tool calls), read from the bytes that passed.

Pure: it takes the request body and the response's chunks with their arrival times; it never opens a
connection. Streams are parsed after they have passed, so reading them costs the agent no latency.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from contract.redact import redact_json, redact_object
from contract.schema import SESSION

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"
APIS = {CHAT_PATH: "chat", RESPONSES_PATH: "responses"}
ERROR_CHARS = 2000  # of an error answer's body, in the file
# Responses API events that carry the answer's first visible token (text or a tool call)
FIRST_TOKEN_EVENTS = (
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.output_item.added",
)


@dataclass
class Passed:
    """A response as it passed the recorder: status, content type, and each chunk with its arrival time
    (seconds after the request left for the upstream)."""

    status: int
    content_type: str
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    kept_bytes: int = 0
    truncated: bool = False  # chunks past the keep limit passed through but were not kept
    broken: str | None = None  # why the answer ended before its end (the upstream or the agent hung up)

    def keep(self, at: float, chunk: bytes, limit: int) -> None:
        if self.kept_bytes + len(chunk) > limit:
            self.truncated = True
            return
        self.chunks.append((at, chunk))
        self.kept_bytes += len(chunk)

    @property
    def body(self) -> bytes:
        return b"".join(chunk for _, chunk in self.chunks)


def scrub(value: dict, secrets: tuple[str, ...]) -> dict:
    """A request body or an answer as it may be written: every secret-named key's value masked at any
    depth (`metadata.api_key`, `extra_headers.Authorization`), and `secrets` (the request's own
    credentials and the secret values its body holds) masked wherever they appear: an agent that pastes
    its key, an upstream that echoes it in an error or an answer."""
    return redact_object(value, secrets)


def answer_of(api: str, passed: Passed) -> dict:
    """What the model answered: status, time to first token and to the last byte (ms, at the recorder),
    usage as the upstream reported it, the text, the tool calls, the finish reason."""
    out = answer_head(passed)
    if passed.status >= 400:
        return out
    if passed.content_type.startswith("text/event-stream"):
        out.update(_streamed(api, passed))
    else:
        out.update(_whole(api, passed.body))
    return out


def answer_head(passed: Passed) -> dict:
    """What every recorded answer starts with: its status and latency (ms to its last byte), whether it
    was cut or broken off, and for a status of 400 or more the body's first ERROR_CHARS as its error."""
    latency = passed.chunks[-1][0] * 1000.0 if passed.chunks else None
    out: dict = {"status": passed.status, SESSION.latency_ms: _ms(latency), SESSION.ttft_ms: None}
    if passed.truncated:
        out["truncated"] = True
    if passed.broken:
        out["broken"] = passed.broken
    if passed.status >= 400:
        out["error"] = error_text(passed.body)
    return out


def error_text(body: bytes) -> str:
    """An error answer's body as the file keeps it: its first ERROR_CHARS, a JSON body's secret-named
    keys masked first (the request's own secrets are masked with the whole answer: `scrub`)."""
    parsed = json_object(body)
    if parsed is None:
        return body[:ERROR_CHARS].decode("utf-8", "replace")
    return json.dumps(redact_json(parsed), ensure_ascii=False)[:ERROR_CHARS]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def sse_events(chunks: list[tuple[float, bytes]]) -> list[tuple[float, str | None, str]]:
    """(arrival, event name, data) of every event: an event arrived with the chunk that completed it."""
    events: list[tuple[float, str | None, str]] = []
    pending, name = b"", None
    data: list[str] = []
    for at, chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.rstrip(b"\r").decode("utf-8", "replace")
            if not line:
                if data:
                    events.append((at, name, "\n".join(data)))
                name, data = None, []
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line.startswith("event:"):
                name = line[6:].strip()
    if data and chunks:
        events.append((chunks[-1][0], name, "\n".join(data)))
    return events


def json_object(data: str | bytes) -> dict | None:
    """The JSON object `data` holds, else None (not JSON, or JSON of another kind)."""
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _streamed(api: str, passed: Passed) -> dict:
    events = [
        (at, name, json_object(data)) for at, name, data in sse_events(passed.chunks) if data != "[DONE]"
    ]
    parsed = [(at, name, value) for at, name, value in events if value is not None]
    return _chat_stream(parsed) if api == "chat" else _responses_stream(parsed)


def _chat_stream(events: list[tuple[float, str | None, dict]]) -> dict:
    text: list[str] = []
    calls: dict[int, dict] = {}
    first, usage, finish, rid = None, None, None, None
    for at, _, chunk in events:
        usage = chunk.get("usage") or usage
        rid = rid or chunk.get("id")
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            finish = choice.get("finish_reason") or finish
            if delta.get("content"):
                text.append(delta["content"])
                first = at if first is None else first
            for part in delta.get("tool_calls") or []:
                first = at if first is None else first
                _merge_call(calls.setdefault(int(part.get("index", 0)), {}), part)
    return {
        "id": rid,
        SESSION.ttft_ms: _ms(None if first is None else first * 1000.0),
        "usage": usage,
        "content": "".join(text),
        "tool_calls": [calls[i] for i in sorted(calls)],
        "finish_reason": finish,
    }


def _merge_call(call: dict, part: dict) -> None:
    """One streamed tool-call delta into the call it continues (id and name once, arguments appended)."""
    if part.get("id"):
        call["id"] = part["id"]
    function = part.get("function") or {}
    if function.get("name"):
        call["name"] = function["name"]
    call["arguments"] = call.get("arguments", "") + (function.get("arguments") or "")


def _responses_stream(events: list[tuple[float, str | None, dict]]) -> dict:
    first, final = None, None
    for at, name, value in events:
        kind = value.get("type") or name
        if first is None and kind in FIRST_TOKEN_EVENTS:
            first = at
        if kind == "response.completed":
            final = value.get("response")
    out = _responses_body(final or {})
    out[SESSION.ttft_ms] = _ms(None if first is None else first * 1000.0)
    return out


def _whole(api: str, body: bytes) -> dict:
    value = json_object(body.decode("utf-8", "replace"))
    if value is None:
        return {"unreadable": True}
    return _responses_body(value) if api == "responses" else chat_answer(value)


def chat_answer(value: dict) -> dict:
    """A whole chat completion's answer as a session file keeps it: id, usage, text, tool calls, finish
    reason (also what LiteLLM's logs hold as a call's `response`, capture/litellm_import.py)."""
    choice = (value.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    functions = [(c.get("id"), c.get("function") or {}) for c in message.get("tool_calls") or []]
    calls = [{"id": i, "name": f.get("name"), "arguments": f.get("arguments") or ""} for i, f in functions]
    return {
        "id": value.get("id"),
        "usage": value.get("usage"),
        "content": message.get("content") or "",
        "tool_calls": calls,
        "finish_reason": choice.get("finish_reason"),
    }


def _responses_body(response: dict) -> dict:
    text, calls = [], []
    for item in response.get("output") or []:
        if item.get("type") == "message":
            text += [p.get("text", "") for p in item.get("content") or [] if p.get("type") == "output_text"]
        elif item.get("type") == "function_call":
            calls.append(
                {"id": item.get("call_id"), "name": item.get("name"), "arguments": item.get("arguments", "")}
            )
    return {
        "id": response.get("id"),
        "usage": response.get("usage"),
        "content": "".join(text),
        "tool_calls": calls,
    }
