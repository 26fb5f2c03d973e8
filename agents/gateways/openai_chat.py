"""OpenAI-compatible chat agent: streams /v1/chat/completions and times it as a user feels it.

Time to first token (content, or a tool call's first delta) and inter-token latency come from our own
clock at each SSE chunk, not from Locust's response time (which for a stream is time to headers). Usage
comes from the final chunk (`stream_options.include_usage`). With tools in the workload each task is an
agent loop of such calls (agents/loop/agent_loop.py). Works against the simulator and any OpenAI-compatible
gateway.
Session stickiness follows the gateway's convention (`--session-header`: a header name, or `user`), for as
many turns as `--session-policy` keeps a session.
"""

from __future__ import annotations

import json
import time

from locust import tag, task

from agents.base import one_line, paced
from agents.gateways.gateway_events import gateway_tool_runs
from agents.gateways.model_call import CallApi, CallParts, ModelCallAgent, fill_usage
from agents.loop.agent_loop import CHAT, first_token, loop_runner_of, opening
from agents.loop.session_policy import session_key
from agents.loop.tool_deltas import ToolCall, ToolCallAssembler, chat_token_kind, message_calls
from agents.wire.reading import BoundedBody
from agents.wire.sse import StreamTiming
from contract.records import RequestRecord
from contract.schema import FIRST_TOKEN_CONTENT


def read_body(body: dict, headers, record: RequestRecord) -> list[ToolCall]:
    """A non-streamed completion: usage from the body, cost from the gateway's header when it sends one;
    the tool calls of its message."""
    record.request_id = body.get("id")
    record.model = body.get("model")
    fill_usage(record, body, headers)
    messages = [c.get("message") or {} for c in body.get("choices") or ()]
    calls = message_calls(messages)
    record.tool_calls = len(calls)
    if not calls and not any(m.get("content") for m in messages):
        record.ok, record.error_kind, record.error = False, "protocol", "completion carried no content"
    return calls


def read_stream(body: BoundedBody, headers, record: RequestRecord, timing: StreamTiming) -> list[ToolCall]:
    """Consume the SSE stream, each chunk handled in this one loop, marking each content or tool-call
    chunk's arrival (TTFT is the first either: first_token_kind says which); fill timing and usage; the
    tool calls reassembled. After `[DONE]` the body's end is read too (`finish`): a stream left unread
    closes its connection, and every next request would pay a new connect on the timed path."""
    usage_chunk = None
    calls = ToolCallAssembler()
    gateway_tools = 0  # tool calls the gateway ran itself and said so on the stream (Hermes)
    for event in body.events():
        if event.data.strip() == "[DONE]":
            break
        chunk = _json_or_none(event.data)
        if chunk is None:
            raise ValueError(f"malformed SSE chunk: {one_line(event.data, 80)}")
        ran = gateway_tool_runs(event.event, chunk)
        if ran:
            gateway_tools += len(ran)
            continue
        kind = chat_token_kind(chunk, calls)
        if kind:
            first_token(record, kind)
            timing.mark_token(event.arrived, kind == FIRST_TOKEN_CONTENT)
        if chunk.get("usage"):
            usage_chunk = chunk
        record.request_id = record.request_id or chunk.get("id")
        record.model = record.model or chunk.get("model")
    record.latency_ms = (time.perf_counter() - timing.sent) * 1000.0
    body.finish()
    timing.fill(record)
    record.itl_ms_mean = timing.itl_ms_mean
    record.itl_ms_max = timing.itl_ms_max
    fill_usage(record, usage_chunk, headers)
    found = calls.calls()
    record.tool_calls = len(found) + gateway_tools
    if not timing.token_times:
        record.ok, record.error_kind, record.error = False, "protocol", "stream carried no content token"
    return found


class ChatAgent(ModelCallAgent):
    """One chat session per simulated agent, streamed."""

    api = CallApi("/v1/chat/completions", "chat", read_stream, read_body)
    weight = 3
    turns = 0  # chat calls made so far: the session policy renews the session by it

    @tag("chat")
    @task
    @paced
    def chat_stream(self) -> None:
        """One chat request, streamed unless `--no-chat-stream` (then usage and cost come from the body);
        with tools in the workload, one agent-loop task of such requests (agents/loop/agent_loop.py)."""
        draw = self.workload.next_request(self.tagged_prompt(), self.arrival)
        loop = self.settings.workload.tool_loop
        if loop is not None:
            loop_runner_of(self, loop).run_task(self, draw, CHAT)
        else:
            record, _ = self.model_call(draw, None, None)
            self.workload.observe(draw, record.tokens_in)
        self.turns += 1

    @property
    def streams(self) -> bool:
        return self.settings.chat_stream

    @property
    def session_key(self) -> str:
        """This turn's session (one per agent unless `--session-policy` renews it), carrying the run id."""
        return session_key(self.run_id, self.agent_id, self.turns, self.settings.session_policy)

    def request_body(self, call: CallParts) -> dict:
        stream, draw, history, step = call.stream, call.draw, call.history, call.step
        body = {
            "model": self.settings.model,
            "messages": opening(self.workload, draw, CHAT) if history is None else history,
            "stream": stream,
            "max_tokens": draw.max_tokens,
            "user": call.session,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        if step is not None and step.offer is not None:
            body.update(step.offer)
        return body


def _json_or_none(text: str) -> dict | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
