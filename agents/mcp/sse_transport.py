"""MCP's HTTP+SSE transport (protocol revision 2024-11-05), the client side: the fallback of a session at
an MCP URL whose server answers the initialize POST with a 4xx (agents/mcp/client.py, as the specification's
backwards compatibility asks): a GET opens the session's event stream, its first `endpoint` event names
where messages are POSTed (202 each), and every response and server message comes back on the stream.

One reader greenlet per session reads the stream and hands each response to the request waiting for it,
so overlapping requests and a request's deadline never leave the stream half read. The session is the
stream: it is closed by closing the stream. Records no row (agents/mcp/agent.py).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import gevent
import httpx
from gevent.event import AsyncResult

from agents.mcp.messages import McpProtocolError, parsed
from agents.wire.reading import BoundedBody, ReadBounds, TooLarge, deadline, error_preview, over
from agents.wire.sse import SseEvent
from agents.wire.target_origin import OffTargetError, path_on

SSE_VERSION = "2024-11-05"  # the revision that defines this transport
ENDPOINT_EVENT = "endpoint"
MESSAGE_EVENT = "message"
# The GET's stream lives as long as the session, idle between calls: no read timeout (close ends it).
STREAM_TIMEOUT = httpx.Timeout(None, connect=10.0)
# An initialize POST answered with one of these is not a server of another transport: no GET is tried.
NOT_A_TRANSPORT_ANSWER = frozenset({401, 403, 407, 408, 413, 429})
CLOSE_WAIT_S = 1.0  # how long a close waits for the reader greenlet to end
CLOSED_BY_KIT = "the kit closed the session's SSE stream"


def falls_back(status: int | None) -> bool:
    """Whether an initialize POST answered `status` asks for the HTTP+SSE transport (a 4xx that is not about
    credentials, size or rate: the specification names 404 and 405)."""
    return status is not None and 400 <= status < 500 and status not in NOT_A_TRANSPORT_ANSWER


class SseStreamClosed(ConnectionError):
    """The session's event stream ended or failed: the session is over."""


@dataclass(frozen=True)
class Posted:
    """What a POST to the session's endpoint (or the stream's GET) was answered: 202 expected of a POST;
    the start of an error's body."""

    status_code: int
    error: str | None = None


class SseChannel:
    """One session's event stream (GET `path`) and the endpoint its messages are POSTed to.

    `heard` is given every server message that answers no request (a notification, a server request);
    `ended` is called once if the stream ends or fails by itself (not when `close` ends it)."""

    def __init__(
        self,
        client: httpx.Client,
        path: str,
        bounds: ReadBounds,
        heard: Callable[[dict], None],
        ended: Callable[[str], None],
    ) -> None:
        self.client = client
        self.path = path
        self.bounds = bounds
        self.heard = heard
        self.on_end = ended
        self.endpoint: str | None = None  # the absolute URL messages are POSTed to
        self.session_id: str | None = None
        self.response: httpx.Response | None = None
        self.events: Iterator[SseEvent] = iter(())
        self.waiting: dict[int, AsyncResult] = {}  # request id -> its response, once read
        self.reader: gevent.Greenlet | None = None
        self.why_ended: str | None = None  # why the stream is over (None while it is open)
        self.closing = False

    def open(self) -> Posted | None:
        """GET the stream and read its endpoint event, within the whole-request deadline; the GET's
        refusal (None once open). Raises on a stream that is not this transport's."""
        with deadline(self.bounds.deadline_s):
            request = self.client.build_request(
                "GET", self.path, headers={"Accept": "text/event-stream"}, timeout=STREAM_TIMEOUT
            )
            response = self.client.send(request, stream=True)
            try:
                if response.status_code >= 400:
                    return Posted(response.status_code, error_preview(response))
                kind = response.headers.get("content-type", "").split(";")[0].strip()
                if kind != "text/event-stream":
                    raise McpProtocolError(
                        f"the GET answered content type {kind or 'none'!r}, not an SSE stream"
                    )
                # the stream's whole size is the session's: only one line (one message) is bounded
                stream_bounds = ReadBounds(self.bounds.deadline_s, sys.maxsize, self.bounds.max_line_bytes)
                self.events = BoundedBody(response, stream_bounds).events()
                self._take_endpoint(next(self.events, None), response)
            except BaseException:
                response.close()
                raise
        self.response = response
        self.reader = gevent.spawn(self._read)
        return None

    def _take_endpoint(self, event: SseEvent | None, response: httpx.Response) -> None:
        if event is None:
            raise McpProtocolError("the SSE stream ended before its endpoint event")
        if event.event != ENDPOINT_EVENT:
            raise McpProtocolError(
                f"the SSE stream's first event is {event.event or 'message'!r}, not endpoint"
            )
        endpoint = response.url.join(event.data.strip())
        try:
            path_on(str(endpoint), str(self.client.base_url))
        except OffTargetError:
            shown, target = endpoint.copy_with(username=None, password=None), self.client.base_url
            raise OffTargetError(
                f"the endpoint event names {shown}, not on the target ({target}): nothing is sent there"
            ) from None
        self.endpoint = str(endpoint)
        query = parse_qs(urlsplit(self.endpoint).query)
        ids = query.get("session_id") or query.get("sessionId")  # the Python SDK's, the TypeScript SDK's
        self.session_id = ids[0] if ids else endpoint.raw_path.decode("ascii")

    def post(self, message: dict, headers: dict[str, str]) -> Posted:
        """One message POSTed to the endpoint (its answer comes on the stream, if it has one)."""
        if self.why_ended is not None:
            raise SseStreamClosed(self.why_ended)
        assert self.endpoint is not None  # opened
        with self.client.stream("POST", self.endpoint, json=message, headers=headers) as response:
            if response.status_code >= 400:
                return Posted(response.status_code, error_preview(response))
            BoundedBody(response, self.bounds).read()  # "Accepted": read, so the connection is kept
        return Posted(response.status_code)

    def request(self, request_id: int, message: dict, headers: dict[str, str]) -> tuple[Posted, int, dict]:
        """POST a request, then wait for its response on the stream (the caller's deadline bounds the
        wait): what the POST was answered, and the response's bytes and message (none after a refused
        POST)."""
        reply = self.waiting[request_id] = AsyncResult()  # before the POST: the answer may come first
        try:
            posted = self.post(message, headers)
            if posted.status_code >= 400:
                return posted, 0, {}
            size, response = reply.get()
            return posted, size, response
        finally:
            self.waiting.pop(request_id, None)

    def _read(self) -> None:
        """The stream read to its end: each response handed to its waiting request (one no longer
        waited for is dropped), other messages to `heard`. Its end fails every request still waiting."""
        error: Exception = SseStreamClosed("the server closed the session's SSE stream")
        try:
            for event in self.events:
                if event.event not in (None, MESSAGE_EVENT):
                    continue  # an event this transport does not define
                self._dispatch(event)
        except TooLarge as exc:
            error = exc
        except Exception as exc:  # a transport error: the stream is over
            error = SseStreamClosed(f"the session's SSE stream failed: {type(exc).__name__}: {exc}")
        finally:
            if self.closing:  # killed by close(): nothing failed
                error = SseStreamClosed(CLOSED_BY_KIT)
            self.why_ended = str(error)
            for reply in list(self.waiting.values()):
                reply.set_exception(error)
        if not self.closing:
            self.on_end(self.why_ended)

    def _dispatch(self, event: SseEvent) -> None:
        try:
            message = parsed(event.data.encode())
        except McpProtocolError as exc:  # garbage on the stream fails what waits, not the stream
            for reply in list(self.waiting.values()):
                reply.set_exception(exc)
            return
        if "method" in message:
            with contextlib.suppress(Exception):  # an answer not sent: the call's deadline says so
                self.heard(message)
            return
        request_id = message.get("id")
        reply = self.waiting.get(request_id) if isinstance(request_id, int) else None
        if reply is None or reply.ready():
            return  # the response to a request no longer waited for (its deadline passed)
        size = len(event.data.encode())
        if size > self.bounds.max_bytes:
            reply.set_exception(
                TooLarge(f"the answer passed {over(self.bounds.max_bytes, '--max-response-bytes')}")
            )
        else:
            reply.set((size, message))

    def close(self) -> None:
        """The stream closed from this side (the session ends with it): the reader stopped, the
        connection released."""
        self.closing = True
        if self.reader is not None:
            self.reader.kill(block=True, timeout=CLOSE_WAIT_S)
        if self.response is not None:
            self.response.close()
        self.why_ended = self.why_ended or CLOSED_BY_KIT
