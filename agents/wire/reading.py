"""Reading a gateway's answer within the run's bounds, for every protocol: a whole-request deadline
(connect to the last byte, `--request-timeout`), a cap on the body (`--max-response-bytes`) and on one
line of an event stream (`--max-sse-line-bytes`).

Reads and raises (`DeadlineExceeded`, `TooLarge`); it never records a row: the agents turn those into
`timeout` and `too_large` rows. Past a cap nothing more is read or kept.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

import gevent
import httpx

from agents.wire.gevent_transport import ARRIVED
from agents.wire.sse import SseCursor, SseEvent, iter_sse

DRAIN_GRACE_S = 0.25  # after the protocol's last event, how long the body's own end may take to arrive
ERROR_PREVIEW_BYTES = 4096  # of an error answer's body: the row keeps one line of it


class DeadlineExceeded(Exception):
    """No complete answer within the whole-request deadline."""


class TooLarge(Exception):
    """The answer passed a cap; reading stopped there."""


@dataclass(frozen=True)
class ReadBounds:
    deadline_s: float
    max_bytes: int
    max_line_bytes: int


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise DeadlineExceeded in the body once `seconds` have passed, whatever it is waiting on (the
    connect, a server that drips comments or garbage forever): httpx's own timeouts are per read."""
    timer = gevent.Timeout(seconds)
    timer.start()
    try:
        yield
    except gevent.Timeout as exc:
        if exc is not timer:
            raise
        raise DeadlineExceeded(f"no complete answer within --request-timeout {seconds:g} s") from None
    finally:
        timer.close()


class BoundedBody:
    """One response's body, read once, in order, within the bounds: whole (`read`), as lines (`lines`),
    and what is left after the protocol's last event (`finish`, so the connection can be reused)."""

    def __init__(self, response: httpx.Response, bounds: ReadBounds) -> None:
        self.bounds = bounds
        self.size = 0
        self._extensions = response.extensions
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > bounds.max_bytes:
            raise TooLarge(f"the body is {declared} bytes: {over(bounds.max_bytes, '--max-response-bytes')}")
        self._chunks = self._counted(response.iter_bytes())

    def _counted(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            self.size += len(chunk)
            if self.size > self.bounds.max_bytes:
                raise TooLarge(f"the body passed {over(self.bounds.max_bytes, '--max-response-bytes')}")
            yield chunk

    def read(self) -> bytes:
        return b"".join(self._chunks)

    def events(self, cursor: SseCursor | None = None) -> Iterator[SseEvent]:
        """The body as server-sent events, each timed by `arrived`."""
        return iter_sse(self.lines(), self.arrived, cursor)

    def arrived(self) -> float:
        """When the bytes just read reached this host, on time.perf_counter's clock: the kernel's stamp
        where the transport has one (agents/wire/gevent_transport.py), else now."""
        stamp = self._extensions.get(ARRIVED)
        return time.perf_counter() if stamp is None else stamp

    def lines(self) -> Iterator[str]:
        """The body's lines without their ends (LF, CRLF or CR, as SSE allows), decoded as UTF-8."""
        parts: list[bytes] = []  # the line so far, not yet ended
        held = 0
        after_cr = False  # the last line ended with CR: an LF first in the next chunk belongs to it
        for chunk in self._chunks:
            if after_cr and chunk.startswith(b"\n"):
                chunk = chunk[1:]
            after_cr = chunk.endswith(b"\r")
            if b"\n" not in chunk and b"\r" not in chunk:
                parts.append(chunk)
                held = self._line_checked(held + len(chunk))
                continue
            lines = (b"".join([*parts, chunk]) if parts else chunk).splitlines(keepends=True)
            tail = b"" if lines[-1].endswith((b"\n", b"\r")) else lines.pop()
            for line in lines:
                ended = line.rstrip(b"\r\n")
                self._line_checked(len(ended))
                yield ended.decode("utf-8", errors="replace")
            parts, held = ([tail], self._line_checked(len(tail))) if tail else ([], 0)
        if parts:
            yield b"".join(parts).decode("utf-8", errors="replace")

    def _line_checked(self, length: int) -> int:
        if length > self.bounds.max_line_bytes:
            raise TooLarge(
                f"an event-stream line passed {over(self.bounds.max_line_bytes, '--max-sse-line-bytes')}"
            )
        return length

    def finish(self, grace_s: float = DRAIN_GRACE_S) -> None:
        """Read what is left of the body (the chunked terminator after `[DONE]`) so httpx can keep the
        connection: an answer left unread closes it, and the next request pays a new connect. A body that
        does not end within `grace_s` is left (its connection closes); the answer already counts."""
        with gevent.Timeout(grace_s, False):
            for _ in self._chunks:
                pass


def release(response: httpx.Response) -> None:
    """Unbind a closed response from its stream. httpx binds them both ways (the stream holds the response
    to stamp its `elapsed`), so a response, its request and its stream chain (~20 objects) are a cycle that
    only the garbage collector frees. A stream lives ~0.5 s, longer than the collector's youngest
    generation: at 100 streams its middle passes found 1,000-2,500 such objects each (3-19 ms) and its full
    passes 20,000-25,000 (40-80 ms, the event loop held and every stream's next token late). Unbound,
    reference counting frees them when the agent lets go of the response."""
    response.stream = _RELEASED


_RELEASED = httpx.ByteStream(b"")  # what a released response's stream is: nothing more to read


def error_preview(response: httpx.Response) -> str:
    """The start of an error answer's body, enough for the row's one line; the rest is not read."""
    kept = b""
    for chunk in response.iter_bytes():
        kept += chunk
        if len(kept) >= ERROR_PREVIEW_BYTES:
            break
    return kept[:ERROR_PREVIEW_BYTES].decode("utf-8", errors="replace")


def over(cap: int, option: str) -> str:
    """The cap as the row's error names it."""
    return f"{option} ({cap:,} bytes)"
