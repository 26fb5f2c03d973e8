"""GenAI client spans made with the real opentelemetry SDK and written as OTLP JSON: the SDK's own OTLP
encoder (protobuf), printed in proto3 JSON, trace and span ids in hex as OTLP/JSON specifies (what the
collector's file exporter writes). The SDK has no OTLP JSON file exporter of its own."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

T0_NS = 1_764_633_600_000_000_000
SECRET = "sk-otel-secret-0123456789"  # set on every span as auth-like attributes: must reach no file


@dataclass
class Step:
    """One chat call: its input and output messages (semconv parts form), when it ran, its usage."""

    start_ms: float
    took_ms: float
    messages: list[dict]
    output: list[dict]
    usage_in: int | None = 40
    usage_out: int | None = 6
    extra: dict = field(default_factory=dict)
    events: list[tuple[str, dict]] = field(default_factory=list)  # older forms: messages on span events


def text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def call(call_id: str, city: str) -> dict:
    return {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": call_id, "name": "lookup", "arguments": {"q": city}}],
    }


def reply(call_id: str, result: str) -> dict:
    return {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": result}]}


TOOLS = [
    {"type": "function", "name": "lookup", "description": "look a city up", "parameters": {"type": "object"}}
]


def export(steps_by_conversation: dict[str | None, list[Step]], path: Path, parents: bool = True) -> Path:
    """One trace per conversation (None: no gen_ai.conversation.id, the trace names it), each an
    invoke_agent span over its chat spans and an execute_tool span; written to `path` as OTLP JSON.
    `parents` False: every chat span a root span, a trace of its own, as an instrumented client makes
    them when nothing opens a span per task (the OpenAI instrumentation as installed)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.capture.otel_spans")
    for conversation, steps in steps_by_conversation.items():
        if not parents:
            for step in steps:
                _chat(tracer, conversation, step)
            continue
        first, last = steps[0].start_ms, steps[-1].start_ms + steps[-1].took_ms
        with tracer.start_as_current_span("invoke_agent", start_time=_ns(first), end_on_exit=False) as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            for step in steps:
                _chat(tracer, conversation, step)
            tool = tracer.start_span("execute_tool lookup", start_time=_ns(first + 1))
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.end(end_time=_ns(first + 2))
        agent.end(end_time=_ns(last))
    request = MessageToDict(encode_spans(exporter.get_finished_spans()))
    for resource in request["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    path.write_text(json.dumps(request, indent=1))
    return path


def _chat(tracer, conversation: str | None, step: Step) -> None:
    span = tracer.start_span("chat sim-model", kind=SpanKind.CLIENT, start_time=_ns(step.start_ms))
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "sim-model",
        "gen_ai.request.max_tokens": 32,
        "gen_ai.tool.definitions": json.dumps(TOOLS),
        "server.address": "127.0.0.1",
        "server.port": 4000,
        "http.request.header.authorization": f"Bearer {SECRET}",
        "gen_ai.openai.api_key": SECRET,
        **step.extra,
    }
    if step.messages:
        attributes["gen_ai.input.messages"] = json.dumps(step.messages)
        attributes["gen_ai.output.messages"] = json.dumps(step.output)
    if conversation is not None:
        attributes["gen_ai.conversation.id"] = conversation
    if step.usage_in is not None:
        attributes["gen_ai.usage.input_tokens"] = step.usage_in
    if step.usage_out is not None:
        attributes["gen_ai.usage.output_tokens"] = step.usage_out
    span.set_attributes(attributes)
    for name, event in step.events:
        span.add_event(name, event, timestamp=_ns(step.start_ms))
    span.end(end_time=_ns(step.start_ms + step.took_ms))


def _ns(ms: float) -> int:
    return T0_NS + int(ms * 1_000_000)
