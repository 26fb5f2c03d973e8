"""OpenTelemetry GenAI client spans (an OTLP JSON trace export) turned into a session file, the one the
recorder writes (its own SessionLog), so sessions people already trace replay like recorded ones.

Only the `gen_ai.*` keys named here are read (model, max_tokens, usage, messages, tool definitions): no
other attribute reaches the file, so auth headers or keys a span carries are never copied. Each chat span
is one call; its session is `gen_ai.conversation.id`, else its trace when the span has a parent, else its
conversation (the recorder's own rule: `_session`); calls go in start order, offsets from the export's
first chat span. The export is read as capture/import_input.py reads every import's input. A span that
is not one (no times, end before start, no messages) stops the import with one line naming the file and
the span; the file appears whole or not at all.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from capture.import_input import DEFAULT_MAX_BYTES, documents
from capture.session_log import (
    SessionImportError,
    SessionLog,
    chat_message,
    check_out,
    conversation_of,
    write_imported,
)
from contract.schema import SESSION

CHAT_OPERATIONS = ("chat", "text_completion")
BY_CONVERSATION_ID = "gen_ai.conversation.id"
BY_TRACE = "trace (spans with a parent)"
BY_FIRST_USER = "first user message (spans without a parent, as the recorder groups calls)"
RULES = (BY_CONVERSATION_ID, BY_TRACE, BY_FIRST_USER)
ROLE_EVENTS = {f"gen_ai.{r}.message": r for r in ("system", "user", "assistant", "tool")}


class OtelImportError(SessionImportError):
    """An export that cannot become a session file: the message is the one line the user sees."""


@dataclass(frozen=True)
class ChatSpan:
    """One GenAI chat span, read: when it ran, its session, and the call as a chat request and answer."""

    where: str  # file:resourceSpans[i].scopeSpans[j].spans[k] (span id)
    start_s: float
    end_s: float
    session: str
    server: str | None  # server.address[:server.port], where the span names its model endpoint
    request: dict[str, Any]
    answer: dict[str, Any]
    rule: str = ""  # how its session was named (RULES)


def any_value(value: object) -> object:
    """An OTLP JSON AnyValue as Python (intValue may be a string: proto3 JSON writes int64 so)."""
    if not isinstance(value, dict):
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return _whole(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values", []))
    return None


def _whole(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def attributes(items: object) -> dict[str, object]:
    return {a["key"]: any_value(a.get("value")) for a in _list(items) if isinstance(a, dict) and "key" in a}


def _list(value: object) -> list:
    return value if isinstance(value, list) else []


def read_export(path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> list[ChatSpan]:
    """Every GenAI chat span of the export (one OTLP JSON document, or one a line as the collector's file
    exporter writes them), in start order; OtelImportError on the first that is not one."""
    spans: list[ChatSpan] = []
    for where, export in documents(path, max_bytes):
        if not isinstance(export, dict) or not isinstance(export.get("resourceSpans"), list):
            raise OtelImportError(f"{where}: not an OTLP JSON trace export (no resourceSpans list)")
        spans += [_chat_span(span, at) for span, at in _spans(export, where) if _is_chat(span)]
    if not spans:
        raise OtelImportError(f"{path}: no GenAI chat span (gen_ai.operation.name 'chat')")
    return sorted(spans, key=lambda s: s.start_s)


def _spans(export: dict, where: str) -> Iterator[tuple[dict, str]]:
    for i, resource in enumerate(export["resourceSpans"]):
        for j, scope in enumerate(_list(resource.get("scopeSpans") if isinstance(resource, dict) else None)):
            for k, span in enumerate(_list(scope.get("spans") if isinstance(scope, dict) else None)):
                if isinstance(span, dict):
                    name = f"{span.get('name', '')!r} {span.get('spanId', '')}".strip()
                    yield span, f"{where}: resourceSpans[{i}].scopeSpans[{j}].spans[{k}] ({name})"


def _is_chat(span: dict) -> bool:
    return attributes(span.get("attributes")).get("gen_ai.operation.name") in CHAT_OPERATIONS


def _chat_span(span: dict, where: str) -> ChatSpan:
    attrs = attributes(span.get("attributes"))
    events = [(e.get("name"), attributes(e.get("attributes"))) for e in _list(span.get("events"))]
    for _, event_attrs in events:  # the 1.26 form: gen_ai.prompt / gen_ai.completion on content events
        attrs = {**event_attrs, **attrs}
    start, end = _nanos(span.get("startTimeUnixNano")), _nanos(span.get("endTimeUnixNano"))
    if start is None or end is None:
        raise OtelImportError(f"{where}: startTimeUnixNano/endTimeUnixNano: expected both times")
    if end < start:
        raise OtelImportError(f"{where}: ends before it starts ({end} < {start} ns)")
    messages, output = _messages(attrs, events, where)
    request: dict[str, Any] = {"model": attrs.get("gen_ai.request.model"), "messages": messages}
    if isinstance(attrs.get("gen_ai.request.max_tokens"), int):
        request["max_tokens"] = attrs["gen_ai.request.max_tokens"]
    tools = _tools(attrs.get("gen_ai.tool.definitions"))
    if tools:
        request["tools"] = tools
    session, rule = _session(attrs, span, request)
    answer = _answer(attrs, output, (end - start) / 1e6) | {"finish_reason": _finish_reason(attrs, events)}
    host, port = attrs.get("server.address"), attrs.get("server.port")
    server = None if not isinstance(host, str) else host + (f":{port}" if isinstance(port, int) else "")
    return ChatSpan(where, start / 1e9, end / 1e9, session, server, request, answer, rule)


def _session(attrs: dict, span: dict, request: dict) -> tuple[str, str]:
    """(a span's session, the rule that named it): its gen_ai.conversation.id; else, when it has a parent
    (an agent's task span above its calls), its trace; else its conversation, a hash of the first user
    message, as the recorder names a session (an instrumented client with no span of its own per task:
    each call is a trace of its own)."""
    if attrs.get("gen_ai.conversation.id"):
        return str(attrs["gen_ai.conversation.id"]), BY_CONVERSATION_ID
    if span.get("parentSpanId"):
        return f"trace-{span.get('traceId', '')}", BY_TRACE
    return conversation_of(request), BY_FIRST_USER


def formed(spans: list[ChatSpan]) -> str:
    """The line saying how the sessions were formed: how many by each rule."""
    by_rule: dict[str, set[str]] = {}
    for span in spans:
        by_rule.setdefault(span.rule, set()).add(span.session)
    counts = [f"{len(by_rule[rule])} by {rule}" for rule in RULES if rule in by_rule]
    return "sessions: " + ", ".join(counts)


def _nanos(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return int(value) or None
    return None


def _json(value: object) -> object:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _messages(attrs: dict, events: list[tuple[object, dict]], where: str) -> tuple[list[dict], dict]:
    """(the chat messages sent, the answer's message) from whichever form the span carries."""
    sent, prompt = _json(attrs.get("gen_ai.input.messages")), _json(attrs.get("gen_ai.prompt"))
    if isinstance(sent, list):
        messages = _system(attrs) + [m for item in sent for m in _semconv_message(item)]
        answered = _json(attrs.get("gen_ai.output.messages"))
        output = _semconv_message(answered[0])[0] if isinstance(answered, list) and answered else {}
    elif isinstance(prompt, list):
        messages = [chat_message(m) for m in prompt]
        completion = _json(attrs.get("gen_ai.completion"))
        output = chat_message(completion[0]) if isinstance(completion, list) and completion else {}
    else:
        messages, output = _event_messages(events)
    if not messages:
        raise OtelImportError(
            f"{where}: no input messages (gen_ai.input.messages, gen_ai.prompt or message events)"
        )
    return messages, output


def _system(attrs: dict) -> list[dict]:
    parts = _json(attrs.get("gen_ai.system_instructions"))
    if not isinstance(parts, list) or not parts:
        return []
    return [{"role": "system", "content": "".join(str(p.get("content", "")) for p in parts if _is_text(p))}]


def _is_text(part: object) -> bool:
    return isinstance(part, dict) and part.get("type") == "text"


def _semconv_message(item: object) -> list[dict]:
    """One semconv message ({role, parts}) as chat messages: a tool response part is a `tool` message."""
    if not isinstance(item, dict):
        return []
    parts = _list(item.get("parts"))
    text = "".join(str(p.get("content", "")) for p in parts if _is_text(p))
    calls = [_tool_call(p) for p in parts if isinstance(p, dict) and p.get("type") == "tool_call"]
    replies = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call_response"]
    if replies:
        return [
            {"role": "tool", "tool_call_id": p.get("id"), "content": _text(p.get("response"))}
            for p in replies
        ]
    message: dict[str, Any] = {"role": item.get("role"), "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = calls
    return [message]


def _tool_call(part: dict) -> dict:
    arguments = part.get("arguments")
    return {
        "id": part.get("id"),
        "type": "function",
        "function": {
            "name": part.get("name"),
            "arguments": _text(arguments) if arguments is not None else "",
        },
    }


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _event_messages(events: list[tuple[object, dict]]) -> tuple[list[dict], dict]:
    """Messages from span events: gen_ai.{system,user,assistant,tool}.message in order; gen_ai.choice."""
    messages: list[dict] = []
    output: dict = {}
    for name, attrs in events:
        if name in ROLE_EVENTS:
            message = {"role": ROLE_EVENTS[name], "content": attrs.get("content")}
            calls = _json(attrs.get("tool_calls"))
            message |= {"tool_calls": calls} if isinstance(calls, list) else {}
            message |= (
                {"tool_call_id": attrs["id"]} if name == "gen_ai.tool.message" and "id" in attrs else {}
            )
            messages.append(message)
        elif name == "gen_ai.choice":
            chosen = _json(attrs.get("message"))
            output = chat_message(chosen) if isinstance(chosen, dict) else {"content": attrs.get("content")}
    return messages, output


def _tools(value: object) -> list[dict]:
    """gen_ai.tool.definitions as chat tools ({type: function, function: {name, description, parameters}})."""
    tools = _json(value)
    out = []
    for tool in _list(tools):
        if isinstance(tool, dict) and "function" in tool:
            out.append({"type": "function", "function": tool["function"]})
        elif isinstance(tool, dict) and tool.get("name"):
            keep = {k: tool[k] for k in ("name", "description", "parameters") if k in tool}
            out.append({"type": "function", "function": keep})
    return out


def _answer(attrs: dict, output: dict, latency_ms: float) -> dict:
    """What the recorder keeps of an answer, from the span: usage, latency, the answer's message."""
    usage_in, usage_out = attrs.get("gen_ai.usage.input_tokens"), attrs.get("gen_ai.usage.output_tokens")
    usage = None
    if isinstance(usage_in, int) or isinstance(usage_out, int):
        usage = {"prompt_tokens": usage_in, "completion_tokens": usage_out}
    chat_calls = [c for c in _list(output.get("tool_calls")) if isinstance(c, dict)]
    calls = [(c.get("function") or {}) | {"id": c.get("id")} for c in chat_calls]
    return {
        "status": 200,
        SESSION.latency_ms: round(latency_ms, 3),
        SESSION.ttft_ms: None,  # a span has no first-token time
        "id": attrs.get("gen_ai.response.id"),
        "usage": usage,
        "content": output.get("content") or "",
        "tool_calls": [
            {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments", "")} for c in calls
        ],
    }


def _finish_reason(attrs: dict, events: list[tuple[object, dict]]) -> object:
    """The answer's finish reason from the first place a span has it: gen_ai.response.finish_reasons, the
    semconv output message's, or the gen_ai.choice event's (a streamed span's only one)."""
    reasons = attrs.get("gen_ai.response.finish_reasons")
    if isinstance(reasons, list) and reasons:
        return reasons[0]
    answered = _json(attrs.get("gen_ai.output.messages"))
    if isinstance(answered, list) and answered and isinstance(answered[0], dict):
        if answered[0].get("finish_reason"):
            return answered[0]["finish_reason"]
    return next(
        (a["finish_reason"] for name, a in events if name == "gen_ai.choice" and "finish_reason" in a), None
    )


def upstream_of(spans: list[ChatSpan]) -> str:
    """The header's upstream: the first server.address the spans name (a span has no scheme), else none."""
    server = next((s.server for s in spans if s.server), "unknown")
    return f"otel://{server}"


def import_export(path: Path, out: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[SessionLog, str]:
    """Write the export's chat spans to `out` as a session file, whole or not at all; (its log, the line
    saying how its sessions were formed)."""
    check_out(out)
    spans = read_export(path, max_bytes)
    return write_imported(out, upstream_of(spans), spans), formed(spans)
