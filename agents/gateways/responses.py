"""OpenAI Responses API agent (POST /v1/responses), streamed or not, timed as a user feels it.

TTFT is our own clock at the first `response.output_text.delta` (or function-call) event; usage comes
from the `response.completed` event (or the body). It never parses usage itself: agents/wire/usage.py does.
With tools in the workload each task is an agent loop of responses (agents/loop/agent_loop.py).
"""

from __future__ import annotations

import json
import time

from locust import tag, task

from agents.base import one_line, paced
from agents.gateways.gateway_events import gateway_tool_runs, response_item_runs
from agents.gateways.model_call import CallApi, CallParts, ModelCallAgent, fill_usage
from agents.loop.agent_loop import RESPONSES, first_token, input_items, loop_runner_of, opening
from agents.loop.tool_deltas import ToolCall, ToolCallAssembler, output_calls
from agents.wire.reading import BoundedBody
from agents.wire.sse import StreamTiming
from contract.records import RequestRecord
from contract.schema import FIRST_TOKEN_CONTENT, FIRST_TOKEN_TOOL_CALL

DELTA_EVENT = "response.output_text.delta"
DONE_EVENT = "response.completed"
FAILED_EVENTS = ("response.failed", "response.incomplete", "error")
TEXT = object()  # a token of text, not of a tool call


def read_body(body: dict, headers, record: RequestRecord) -> list[ToolCall]:
    """A non-streamed response: one JSON object with output, usage and status; the function calls left
    for the client (those the gateway ran itself, their outputs beside them, count in tool_calls only)."""
    record.request_id = body.get("id")
    record.model = body.get("model")
    fill_usage(record, body, headers)
    if body.get("status") not in (None, "completed"):
        record.ok, record.error_kind = False, "protocol"
        record.error = one_line(f"response status {body.get('status')}: {body.get('error') or ''}")
    output = body.get("output") or []
    ran = [call_id for item in output for call_id in response_item_runs(item)]
    calls = [c for c in output_calls(output) if not answered(c.call_id, ran)]
    record.tool_calls = len(calls) + len(ran)
    return calls


def read_stream(body: BoundedBody, headers, record: RequestRecord, timing: StreamTiming) -> list[ToolCall]:
    """Consume the typed SSE events: text deltas and function-call tokens (TTFT is the first either:
    first_token_kind says which), usage from `response.completed`, the calls reassembled. A call the
    gateway ran itself (its output follows in the stream, agents/gateways/gateway_events.py) is not the
    client's
    to run and not a token the client waits for: the tokens are marked at the end, without those."""
    final = None
    calls = ToolCallAssembler()
    tokens: list[tuple[float, object]] = []  # arrival, and TEXT or the call item the token belongs to
    ran: list[str] = []  # the gateway's own tool calls, by call id
    for event in body.events():
        if event.data.strip() == "[DONE]":  # OpenClaw ends its Responses stream as chat completions do
            break
        data = json.loads(event.data)
        kind = event.event or data.get("type")
        if kind == DELTA_EVENT and data.get("delta"):
            tokens.append((event.arrived, TEXT))
        elif calls.add_response_event(kind, data):
            tokens.append((event.arrived, calls.last_key))
        elif kind == DONE_EVENT:
            final = data
        elif kind in FAILED_EVENTS:
            record.ok, record.error_kind, record.error = False, "protocol", one_line(event.data)
        else:
            ran += gateway_tool_runs(kind, data)
    record.latency_ms = (time.perf_counter() - timing.sent) * 1000.0
    body.finish()
    for at, key in tokens:
        if key is TEXT or not answered(calls.call_id_of(key), ran):
            first_token(record, FIRST_TOKEN_CONTENT if key is TEXT else FIRST_TOKEN_TOOL_CALL)
            timing.mark_token(at, content=key is TEXT)
    timing.fill(record)
    record.itl_ms_mean, record.itl_ms_max = timing.itl_ms_mean, timing.itl_ms_max
    if final is not None:
        record.request_id = (final.get("response") or {}).get("id")
        fill_usage(record, final, headers)
    found = [c for c in calls.calls() if not answered(c.call_id, ran)]
    record.tool_calls = len(found) + len(ran)
    if record.ok and (final is None or not timing.token_times):
        record.ok, record.error_kind = False, "protocol"
        record.error = "stream ended without response.completed" if final is None else "no text delta"
    return found


def answered(call_id: str, ran: list[str]) -> bool:
    """Whether the gateway ran this call itself (its output carries the call's id)."""
    return bool(call_id) and call_id in ran


def as_items(history: list[dict]) -> list[dict]:
    """A loop's history, typed at its start (`RESPONSES.first_items`), goes as it is: its encoded parts
    are reused (agents/wire/request_body.py); any other list is typed here."""
    return history if all("type" in m for m in history) else input_items(history)


class ResponsesAgent(ModelCallAgent):
    """One conversation per simulated agent over the Responses API (`--responses-stream` to stream)."""

    api = CallApi("/v1/responses", "responses", read_stream, read_body)
    weight = 3

    @tag("responses")
    @task
    @paced
    def respond(self) -> None:
        """One response; with tools in the workload, one agent-loop task of them
        (agents/loop/agent_loop.py)."""
        draw = self.workload.next_request(self.tagged_prompt(), self.arrival)
        loop = self.settings.workload.tool_loop
        if loop is not None:
            loop_runner_of(self, loop).run_task(self, draw, RESPONSES)
            return
        record, _ = self.model_call(draw, None, None)
        self.workload.observe(draw, record.tokens_in)

    @property
    def streams(self) -> bool:
        return self.settings.responses_stream

    @property
    def session_key(self) -> str:
        return f"{self.run_id}-{self.agent_id}"

    def request_body(self, call: CallParts) -> dict:
        """One user message goes as the `input` text (as it always did); more, or a loop's history, as
        input items (`store: false`: each step sends the whole history, none is kept by the gateway)."""
        draw, history, step = call.draw, call.history, call.step
        single = history is None and len(draw.messages) == 1 and draw.messages[0].get("role") == "user"
        items = opening(self.workload, draw, RESPONSES) if history is None else as_items(history)
        body = {
            "model": self.settings.model,
            "input": draw.messages[0]["content"] if single else items,
            "stream": call.stream,
            "max_output_tokens": draw.max_tokens,
            "user": call.session,
            "store": False,
        }
        if step is not None and step.offer is not None:
            body.update(step.offer)
        return body
