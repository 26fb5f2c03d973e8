"""MCP's client side, what every transport shares (`McpSession`: the handshake's version check, a
response read into an Answer, the server's own requests answered) and Streamable HTTP on the agent's own
sync httpx client (Locust's agents are greenlets: no asyncio client fits): initialize,
notifications/initialized, requests, DELETE to close; where the server answers the initialize POST with
a 4xx, the same session over the 2024-11-05 HTTP+SSE transport (agents/mcp/sse_transport.py). Stdio is
agents/mcp/stdio.py.

An answer is JSON or an SSE stream; on the stream the server's notifications (progress, logs) are counted
and its own requests answered at once (ping with an empty result, anything else with a JSON-RPC error:
the kit serves no client features), so a server waiting on the kit never hangs a call. Every read is
within the run's bounds (agents/wire/reading.py). Raises on what is not MCP; records no row
(agents/mcp/agent.py).
"""

from __future__ import annotations

import abc
import contextlib
import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

import gevent
import httpx

from agents.mcp.messages import MCP_REVISIONS, McpProtocolError, parsed
from agents.mcp.sse_transport import SSE_VERSION, SseChannel, falls_back
from agents.wire.reading import BoundedBody, ReadBounds, deadline, error_preview
from agents.wire.sse import SseCursor

PROTOCOL_VERSION = MCP_REVISIONS[-1]  # the newest revision: what initialize offers unless one is pinned
HTTP_VERSIONS = MCP_REVISIONS[1:]  # Streamable HTTP's revisions (2025-03-26 on)
SSE_VERSIONS = (SSE_VERSION, *HTTP_VERSIONS)  # HTTP+SSE is 2024-11-05's; its servers may agree a later one
RETRY_DEFAULT_MS = 1000  # before a stream is resumed, when the server named no `retry:`
LAST_EVENT_ID = "Last-Event-ID"
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
ACCEPT = "application/json, text/event-stream"
METHOD_NOT_FOUND = -32601
ENDED_BY_SERVER = "the server ended the session (HTTP 404 to its Mcp-Session-Id)"


@dataclass
class Answer:
    """One request's answer: its result or JSON-RPC error, the HTTP status (None over stdio), what came
    with it."""

    status_code: int | None
    result: dict | None = None
    error_code: int | None = None
    error: str | None = None  # the JSON-RPC error's message, or the start of an HTTP error's body
    size: int = 0  # bytes received
    notifications: int = 0  # server notifications on the answer's stream
    refused: int = 0  # server requests answered with an error

    @property
    def ok(self) -> bool:
        return (self.status_code or 0) < 400 and self.error_code is None


class McpSession(abc.ABC):
    """One MCP session, whatever carries it: what a transport adds is how a message travels."""

    versions: ClassVar[tuple[str, ...]] = HTTP_VERSIONS  # the protocol revisions the kit speaks on it

    def __init__(self, bounds: ReadBounds, client_info: dict, offer: str | None = None) -> None:
        self.bounds = bounds
        self.client_info = client_info
        self.offer = offer or PROTOCOL_VERSION  # the revision initialize asks for (--mcp-protocol-version)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.dropped = False  # the server ended the session: every later request on it would fail
        self.ids = itertools.count(1)

    @abc.abstractmethod
    def fresh(self) -> McpSession:
        """A new session like this one, on the same server (the server ended this one)."""

    @abc.abstractmethod
    def initialize(self) -> Answer:
        """The handshake's request; the version agreed is kept (`agree`)."""

    @abc.abstractmethod
    def initialized(self) -> None:
        """notifications/initialized: the session is ready for work."""

    @abc.abstractmethod
    def request(self, method: str, params: dict | None = None) -> Answer:
        """One request and its answer."""

    @abc.abstractmethod
    def close(self) -> Answer:
        """End the session from the client's side."""

    def end(self) -> None:  # noqa: B027 - a hook: over HTTP nothing is held on this side
        """What the session holds on this side released, with no request (the agent stops)."""

    def abandon(self) -> None:
        """A session whose opening failed: released here (over stdio its process stopped at once), and
        over HTTP closed on the server when it had one (its id came with the initialize answer), so a
        failed open leaves nothing behind. No row: the failure is the open's."""
        self.end()

    def ended_why(self) -> str:
        """How agents.csv says the server ended the session (when `dropped`)."""
        return ENDED_BY_SERVER

    def initialize_params(self) -> dict:
        return {"protocolVersion": self.offer, "capabilities": {}, "clientInfo": self.client_info}

    def agree(self, answer: Answer, versions: tuple[str, ...] | None = None) -> None:
        """The version an initialize answer names kept, as the specification's negotiation has a client do:
        it offered one, the server answers that or another it speaks; one the kit does not speak (on this
        transport: `versions`, else the class's) is a McpProtocolError."""
        version = (answer.result or {}).get("protocolVersion")
        versions = versions or self.versions
        if version not in versions:
            raise McpProtocolError(
                f"the server answered protocol version {version!r}; the kit speaks {', '.join(versions)}"
            )
        self.protocol_version = version

    def take(self, message: dict, request_id: int, answer: Answer) -> dict | None:
        """The message if it is the response to `request_id` (filled into `answer`); a notification is
        counted, a server request answered."""
        if "method" in message:
            if "id" in message:
                answer.refused += self.answer_server(message)
            else:
                answer.notifications += 1
            return None
        if message.get("id") != request_id:
            return None  # a response to another request (a stream resumed): not this one's
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            answer.error_code = error.get("code") if isinstance(error.get("code"), int) else -1
            answer.error = str(error.get("message") or message["error"])
        elif isinstance(message.get("result"), dict):
            answer.result = message["result"]
        else:
            raise McpProtocolError(f"a response to request {request_id} with neither result nor error")
        return message

    def answer_server(self, request: dict) -> int:
        """Answer a server request: ping succeeds, everything else is refused (1)."""
        if request["method"] == "ping":
            self.send_only({"jsonrpc": "2.0", "id": request["id"], "result": {}}, "a ping's answer")
            return 0
        error = {"code": METHOD_NOT_FOUND, "message": f"the load kit serves no {request['method']}"}
        self.send_only({"jsonrpc": "2.0", "id": request["id"], "error": error}, "a refusal")
        return 1

    @abc.abstractmethod
    def send_only(self, message: dict, what: str) -> None:
        """A message that gets no JSON-RPC answer (a notification, a response)."""

    def message(self, method: str, params: dict | None) -> tuple[int, dict]:
        """A request of the session's next id."""
        request_id = next(self.ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        return request_id, message


class McpHttpSession(McpSession):
    """One MCP session at `path` on the client's origin: over Streamable HTTP, or over HTTP+SSE (the
    2024-11-05 transport, agents/mcp/sse_transport.py) when the server answers the initialize POST with a 4xx
    and a
    GET of the same URL opens an event stream (`sse`: a session known to be there, no POST tried)."""

    def __init__(
        self,
        client: httpx.Client,
        path: str,
        bounds: ReadBounds,
        client_info: dict,
        sse: bool = False,
        offer: str | None = None,
    ) -> None:
        super().__init__(bounds, client_info, offer)
        self.client = client
        self.path = path
        self.sse_known = sse  # the server speaks HTTP+SSE here (found by this session, or told)
        self.channel: SseChannel | None = None  # the HTTP+SSE session's stream, when it speaks that
        self.notifications = 0  # over HTTP+SSE, server notifications (they ride no request's answer)
        self.refused = 0  # over HTTP+SSE, server requests answered with an error

    def fresh(self) -> McpHttpSession:
        info, sse, offer = self.client_info, self.sse_known, self.offer
        return McpHttpSession(self.client, self.path, self.bounds, info, sse, offer)

    def headers(self) -> dict[str, str]:
        headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
        if self.session_id and self.channel is None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version:
            headers[VERSION_HEADER] = self.protocol_version
        return headers

    def initialize(self) -> Answer:
        """The handshake's request: the session id and the version agreed are kept from its answer. A POST
        answered with a 4xx that names no other trouble (404, 405...) is tried as HTTP+SSE, as MCP's
        backwards compatibility has a client do; the one answer is then that transport's."""
        if self.sse_known:
            return self._initialize_over_sse(None)
        answer, response = self._exchange("initialize", self.initialize_params())
        if falls_back(answer.status_code):
            return self._initialize_over_sse(answer)
        if answer.ok:
            self.agree(answer)
        return answer

    def _initialize_over_sse(self, posted: Answer | None) -> Answer:
        """The GET's stream opened (the session exists once its endpoint is named), then initialize."""
        channel = SseChannel(self.client, self.path, self.bounds, self._heard, self._ended)
        refused = channel.open()
        if refused is not None:
            tried = f"POST answered {posted.status_code}; " if posted is not None else ""
            error = f"{tried}GET (HTTP+SSE) answered {refused.status_code}: {refused.error}"
            return Answer(refused.status_code, error=error, size=len(refused.error or ""))
        self.channel, self.session_id, self.sse_known = channel, channel.session_id, True
        answer = self.request("initialize", self.initialize_params())
        if answer.ok:
            self.agree(answer, SSE_VERSIONS)
        return answer

    def initialized(self) -> None:
        """notifications/initialized (202 expected)."""
        message = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        with deadline(self.bounds.deadline_s):
            self.send_only(message, "notifications/initialized")

    def request(self, method: str, params: dict | None = None) -> Answer:
        if self.channel is not None:
            return self._over_sse(self.channel, method, params)
        return self._exchange(method, params)[0]

    def close(self) -> Answer:
        """DELETE the session. 405 (the server does not let clients end sessions; it is left to expire)
        and 404 (the server had ended it: agents.csv says so) are not failures of the close; nor is a
        session without an id (a stateless server). Over HTTP+SSE the close is the stream's."""
        if self.channel is not None:
            self.channel.close()
            self.session_id = None
            return Answer(200)
        if not self.session_id:
            return Answer(200)
        status, size = self._bounded("DELETE", None)
        self.dropped = self.dropped or status == 404  # the server had ended it already
        self.session_id = None
        return Answer(200 if status in (404, 405) else status, size=size)

    def _bounded(self, method: str, message: dict | None) -> tuple[int, int]:
        """A request whose answer's body means nothing to MCP (a notification's 202, a DELETE's): its
        status and size, the body read within the run's bounds (a huge one fails, TooLarge)."""
        with (
            deadline(self.bounds.deadline_s),
            self.client.stream(method, self.path, json=message, headers=self.headers()) as response,
        ):
            body = BoundedBody(response, self.bounds)
            body.read()
            return response.status_code, body.size

    def end(self) -> None:
        """Over HTTP+SSE, the stream closed (the session ends with it); over Streamable HTTP nothing is
        held on this side."""
        if self.channel is not None:
            self.channel.close()

    def abandon(self) -> None:
        if self.session_id and not self.dropped and self.channel is None:
            with contextlib.suppress(Exception):  # the server's answer changes nothing here
                self.close()
        self.session_id = None  # nothing left to close, whatever the DELETE met
        self.end()

    def ended_why(self) -> str:
        if self.channel is not None and self.channel.why_ended is not None:
            return f"the server ended the session ({self.channel.why_ended})"
        return ENDED_BY_SERVER

    def _exchange(self, method: str, params: dict | None) -> tuple[Answer, httpx.Response]:
        request_id, message = self.message(method, params)
        with (
            deadline(self.bounds.deadline_s),
            self.client.stream("POST", self.path, json=message, headers=self.headers()) as response,
        ):
            if response.status_code >= 400:
                self.dropped = self.dropped or (response.status_code == 404 and self.session_id is not None)
                preview = error_preview(response)
                return Answer(response.status_code, error=preview, size=len(preview)), response
            if method == "initialize":  # kept first: a session whose answer then fails is still closed
                self.session_id = response.headers.get(SESSION_HEADER)
            answer = self._read(response, request_id)
        return answer, response

    def _over_sse(self, channel: SseChannel, method: str, params: dict | None) -> Answer:
        """A request POSTed to the session's endpoint, its response read off the stream."""
        request_id, message = self.message(method, params)
        with deadline(self.bounds.deadline_s):
            posted, size, response = channel.request(request_id, message, self.headers())
        if posted.status_code >= 400:
            if posted.status_code == 404:  # the server no longer knows the session
                self._ended(f"HTTP 404 to its endpoint {channel.endpoint}")
            return Answer(posted.status_code, error=posted.error, size=len(posted.error or ""))
        answer = Answer(posted.status_code, size=size)
        self.take(response, request_id, answer)
        return answer

    def _heard(self, message: dict) -> None:
        """A server message on the HTTP+SSE stream that answers no request: counted, or answered."""
        if "id" in message:
            self.refused += self.answer_server(message)
        else:
            self.notifications += 1

    def _ended(self, why: str) -> None:
        """The server ended the HTTP+SSE session (its stream closed, a 404 to its endpoint)."""
        self.dropped = True
        if self.channel is not None:
            self.channel.why_ended = self.channel.why_ended or why

    def _read(self, response: httpx.Response, request_id: int) -> Answer:
        """The answer to `request_id`: a JSON body, or an SSE stream read until the response; a stream that
        ends before it, having named an event id, is resumed (`_resume`) as the specification's
        resumability has a client do."""
        kind = response.headers.get("content-type", "").split(";")[0].strip()
        answer = Answer(response.status_code)
        if kind == "application/json":
            body = BoundedBody(response, self.bounds)
            found = self.take(parsed(body.read()), request_id, answer)
            answer.size = body.size
        elif kind == "text/event-stream":
            cursor = SseCursor()
            found = self._read_stream(response, request_id, answer, cursor)
            if found is None and cursor.last_id is not None and self.session_id is not None:
                found = self._resume(request_id, answer, cursor)
        else:
            raise McpProtocolError(f"answer of content type {kind or 'none'!r}, not JSON or an SSE stream")
        if found is None:
            raise McpProtocolError(f"the answer ended without the response to request {request_id}")
        return answer

    def _read_stream(
        self, response: httpx.Response, request_id: int, answer: Answer, cursor: SseCursor
    ) -> dict | None:
        """One event stream read until the response to `request_id` (None if it ended first); its bytes
        added to the answer's, the whole answer within --max-response-bytes."""
        remaining = ReadBounds(
            self.bounds.deadline_s, max(self.bounds.max_bytes - answer.size, 0), self.bounds.max_line_bytes
        )
        body = BoundedBody(response, remaining)
        found = None
        try:
            for event in body.events(cursor):
                found = self.take(parsed(event.data.encode()), request_id, answer)
                if found is not None:
                    body.finish()
                    break
        finally:
            answer.size += body.size
        return found

    def _resume(self, request_id: int, answer: Answer, cursor: SseCursor) -> dict | None:
        """The stream resumed after it ended without the response: after the server's `retry:`, a GET with
        Last-Event-ID, read on; again while each resumed stream ends early (the caller's deadline bounds
        it all). A GET refused ends the tries."""
        found = None
        while found is None:
            gevent.sleep((cursor.retry_ms if cursor.retry_ms is not None else RETRY_DEFAULT_MS) / 1000.0)
            headers = {**self.headers(), "Accept": "text/event-stream", LAST_EVENT_ID: cursor.last_id or ""}
            headers.pop("Content-Type")
            with self.client.stream("GET", self.path, headers=headers) as response:
                if response.status_code >= 400:
                    raise McpProtocolError(
                        f"the answer's stream ended without the response to request {request_id}, and "
                        f"resuming it (GET with Last-Event-ID) was answered HTTP {response.status_code}"
                    )
                found = self._read_stream(response, request_id, answer, cursor)
        return found

    def send_only(self, message: dict, what: str) -> None:
        """A message that gets no JSON-RPC answer (a notification, a response): 202 (or 200) expected."""
        if self.channel is not None:
            posted = self.channel.post(message, self.headers())
            status, text = posted.status_code, posted.error or ""
        else:
            status, _ = self._bounded("POST", message)
            text = ""
        if status >= 400:
            raise McpProtocolError(f"{what}: HTTP {status} {text[:120]}")
