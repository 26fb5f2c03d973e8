"""One model call over HTTP, written once for the chat-completions and Responses agents.

The call's shape is the same in both APIs: wait out a backoff, open a row, send the body under the request
deadline, read the answer streamed or whole, turn any failure into the row, check a loop step's calls,
report. An API supplies only what differs (`CallApi`: its path, its operation name, its two readers;
and its agent's `streams`, `session_key` and `request_body`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import ClassVar

from locust import between

from agents.base import KitAgent, failed_record, http_record, thinking
from agents.loop.agent_loop import LoopStep, check_step, step_fields
from agents.loop.mcp_tools import close_mcp_tools
from agents.loop.tool_deltas import ToolCall
from agents.wire.reading import BoundedBody
from agents.wire.sse import StreamTiming
from agents.wire.usage import parse_usage
from agents.workload import Draw
from contract.records import RequestRecord


@dataclass(frozen=True)
class CallParts:
    """What one call's body is made of: streamed or not, the draw, the session it names, and on an agent
    loop's step its history so far (None: the draw as it is) and the step (the tools it offers)."""

    stream: bool
    draw: Draw
    session: str
    history: list[dict] | None = None
    step: LoopStep | None = None


@dataclass(frozen=True)
class CallApi:
    """How one API is called: where, under which operation name (`.stream` added when streamed), and how
    its answer is read into the row (a stream's events, or one JSON body), giving the tool calls."""

    path: str
    operation: str
    read_stream: Callable[[BoundedBody, Mapping[str, str], RequestRecord, StreamTiming], list[ToolCall]]
    read_body: Callable[[dict, Mapping[str, str], RequestRecord], list[ToolCall]]


class ModelCallAgent(KitAgent):
    """An agent whose unit of work is one model call (`model_call`, also the agent loop's step); its own
    think time 0.5-1.5 s, its loop's MCP session (if any) closed at its stop."""

    abstract = True
    api: ClassVar[CallApi]
    wait_time = thinking(between(0.5, 1.5))

    def on_stop(self) -> None:
        close_mcp_tools(self)  # a loop whose tools are an MCP server's: its session closed
        super().on_stop()

    @property
    def streams(self) -> bool:
        """Whether this agent's calls stream (each API has its own option)."""
        raise NotImplementedError

    @property
    def session_key(self) -> str:
        raise NotImplementedError

    def request_body(self, call: CallParts) -> dict:
        raise NotImplementedError

    def model_call(
        self, draw: Draw, history: list[dict] | None, step: LoopStep | None
    ) -> tuple[RequestRecord, list[ToolCall]]:
        """One call of `history` (None: the draw as it is; offering the loop's tools at a step), reported
        as a row; the tool calls it answered with."""
        self.honour_backoff()
        stream = self.streams
        operation = f"{self.api.operation}.stream" if stream else self.api.operation
        record = RequestRecord(ts=time.time(), agent_id=self.agent_id, operation=operation, **draw.asked())
        step_fields(record, step)
        session = record.session_id = self.session_of(draw, self.session_key)
        calls: list[ToolCall] = []
        started = time.perf_counter()
        try:
            with self.reported_if_cut(record, started):
                body = self.request_body(CallParts(stream, draw, session, history, step))
                calls = self.send(record, body, session, StreamTiming(started, []) if stream else None)
        except Exception as exc:  # every failure becomes a row, never a crash
            failed_record(record, exc, started)
        if record.latency_ms is None:
            record.latency_ms = (time.perf_counter() - started) * 1000.0
        check_step(record, calls, step)
        self.report(record)
        return record, calls

    def send(
        self, record: RequestRecord, body: dict, session: str, timing: StreamTiming | None
    ) -> list[ToolCall]:
        """POST the body; the answer read into the row, streamed when `timing` clocks it."""
        headers = session_headers(self.settings.session_header, session)
        with self.streamed("POST", self.api.path, json=body, headers=headers) as response:
            if response.status_code >= 400:
                http_record(record, response)
                return []
            record.status_code = response.status_code
            if timing is not None:
                return self.api.read_stream(self.body(response), response.headers, record, timing)
            return self.api.read_body(json.loads(self.body(response).read()), response.headers, record)


def fill_usage(record: RequestRecord, body: dict | None, headers) -> None:
    """Copy the usage the gateway reported into the row; a field it did not report stays empty."""
    for name, value in parse_usage(body, headers).as_row().items():
        if value is not None:
            setattr(record, name, value)


def session_headers(header: str | None, session_key: str) -> dict[str, str]:
    """`user` (or nothing) means stickiness by the body's `user` field only, which is always sent."""
    if not header or header == "user":
        return {}
    return {header: session_key}
