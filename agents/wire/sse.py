"""Server-sent events parsing and stream timing: time to first content token, inter-token latency, and
the span of the content tokens received (TPOT's, contract/derived.py).

Pure: it takes lines (as an HTTP client yields them) and arrival times; it never opens a connection.
An empty or role-only chunk is not a token: TTFT is measured to the first chunk that carries content.
"""

from __future__ import annotations

import operator
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class SseEvent:
    data: str
    event: str | None
    arrived: float  # clock reading when the event's last line arrived


@dataclass
class SseCursor:
    """What a stream said of itself besides its events (the SSE standard's last event ID and reconnection
    time): MCP resumes a stream from them (a GET with Last-Event-ID after `retry_ms`). A priming event
    (an `id:` with empty data) sets them and is no event of its own."""

    last_id: str | None = None
    retry_ms: int | None = None


def iter_sse(
    lines: Iterable[str], clock: Callable[[], float] = time.perf_counter, cursor: SseCursor | None = None
) -> Iterator[SseEvent]:
    """Yield one event per blank-line-terminated block, as the SSE standard dispatches them: data lines
    joined with newlines, a block whose data is empty not dispatched, comments (`:`) skipped; `id:` and
    `retry:` kept in `cursor`."""
    data: list[str] = []
    event: str | None = None
    cursor = cursor if cursor is not None else SseCursor()
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data and (text := "\n".join(data)):
                yield SseEvent(text, event, clock())
            data, event = [], None
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value.strip()
        elif name == "id" and "\0" not in value:
            cursor.last_id = value
        elif name == "retry" and value.isdigit():
            cursor.retry_ms = int(value)
    if data and (text := "\n".join(data)):
        yield SseEvent(text, event, clock())


@dataclass
class StreamTiming:
    """Arrival times of content tokens relative to the moment the request was sent."""

    sent: float
    token_times: list[float]
    content_tokens: int = 0  # of the tokens marked, those of content (not a tool call's fragment)
    first_content: float | None = None
    last_content: float | None = None

    def mark_token(self, at: float, content: bool = True) -> None:
        """A token arrived at `at`: content, or (content False) a tool call's fragment, which counts for
        TTFT and ITL but not for TPOT: TPOT is the pace of the text the client received."""
        self.token_times.append(at)
        if content:
            self.content_tokens += 1
            self.first_content = at if self.first_content is None else self.first_content
            self.last_content = at

    def fill(self, record: Any) -> None:
        """The row's TTFT, chunk count and received content (tokens, first-to-last span)."""
        record.ttft_ms, record.chunks = self.ttft_ms, len(self.token_times)
        record.content_tokens = self.content_tokens
        if self.first_content is not None and self.last_content is not None:
            record.content_span_ms = (self.last_content - self.first_content) * 1000.0

    @property
    def ttft_ms(self) -> float | None:
        if not self.token_times:
            return None
        return (self.token_times[0] - self.sent) * 1000.0

    @property
    def itl_ms_mean(self) -> float | None:
        """The mean gap between tokens: the gaps sum to the first-to-last span."""
        times = self.token_times
        return (times[-1] - times[0]) * 1000.0 / (len(times) - 1) if len(times) > 1 else None

    @property
    def itl_ms_max(self) -> float | None:
        times = self.token_times
        return max(map(operator.sub, times[1:], times)) * 1000.0 if len(times) > 1 else None
