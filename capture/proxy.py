"""The recorder: a transparent HTTP proxy between an agent and its model endpoint. Every request is
forwarded to the upstream as it came (hop-by-hop headers aside) and every response byte is written back
the moment it arrives, so the agent's own timing is unchanged; chat completions, Responses calls and MCP
tool calls (Streamable HTTP) are also kept, and written to the session file once their response has ended.

Only the upstream it was given is ever contacted, redirects are passed back (never followed), and no header
is recorded: credentials reach the upstream and nothing else.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import struct
import time

import aiohttp
from aiohttp import web

from capture.exchange import APIS, Passed, answer_of, json_object, scrub
from capture.mcp_exchange import rpc_request, tool_answer_of, tool_call_of
from capture.session_log import SessionLog
from contract.redact import secret_values
from contract.schema import SESSION_MCP_API

log = logging.getLogger("kit.capture")
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        "accept-encoding",  # asked as identity: the recorder reads what passes
        "content-encoding",
    }
)
MAX_REQUEST_BYTES = 64 * 1024 * 1024  # a 225K-token agent history is ~1 MiB; past this the agent gets 413
KEEP_RESPONSE_BYTES = 64 * 1024 * 1024  # of one response, kept for the file (all of it is passed on)
CREDENTIAL_HEADERS = ("authorization", "x-api-key", "api-key")
AGENT_LEFT = "the agent hung up"  # a broken answer's reason when the agent left before its end
END_GRACE_S = 0.5  # after an agent hung up: how long the upstream's answer may take to show its end
MCP_SESSION_HEADER = "Mcp-Session-Id"  # joins an MCP session's unmatched tool calls; never written


def forwarded_headers(headers) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}


def credentials_in(headers) -> tuple[str, ...]:
    """The request's own secrets (a bearer token, an API key header), masked if the body repeats them."""
    values = [headers.get(name, "") for name in CREDENTIAL_HEADERS]
    return tuple(v.split(" ", 1)[-1] for v in values if len(v) >= 8)


def secrets_of(headers, body: dict) -> tuple[str, ...]:
    """Every secret a call carries: its credential headers' and its body's secret-named values, masked
    wherever the request or its answer repeats them."""
    return (*credentials_in(headers), *secret_values(body))


class Recorder:
    """The proxy's handler and its one upstream client."""

    def __init__(self, upstream: str, log_: SessionLog, session_header: str | None = None) -> None:
        self.upstream = upstream.rstrip("/")
        self.sessions = log_
        self.session_header = session_header
        self.client: aiohttp.ClientSession | None = None

    async def start(self, _: web.Application) -> None:
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=30)
        connector = aiohttp.TCPConnector(limit=0)
        # no cookie jar: a cookie the upstream sets for one agent is passed back to it, never sent for others
        jar = aiohttp.DummyCookieJar()
        self.client = aiohttp.ClientSession(
            timeout=timeout, connector=connector, auto_decompress=False, cookie_jar=jar
        )

    async def stop(self, _: web.Application) -> None:
        if self.client is not None:
            await self.client.close()
        self.sessions.close()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        sent = time.time()
        response, passed = await self._relay(request, body)  # parsed after: its cost is not the agent's
        api = APIS.get(request.path) if request.method == "POST" else None
        parsed = json_object(body) if api else None
        if api and parsed is None:
            log.warning("%s %s: not a JSON object: forwarded, not recorded", request.method, request.path)
        named = request.headers.get(self.session_header) if self.session_header else None
        if api and parsed is not None and passed is not None:
            session = self.sessions.session_of(parsed, named)
            secrets = secrets_of(request.headers, parsed)
            answer = scrub(answer_of(api, passed), secrets)
            self.sessions.record(session, sent, api, scrub(parsed, secrets), answer)
        elif not api and request.method == "POST" and passed is not None:
            self.record_tool_call(request, body, sent, passed, named)
        return response

    def record_tool_call(
        self, request: web.Request, body: bytes, sent: float, passed: Passed, named: str | None
    ) -> None:
        """An MCP tools/call (a JSON-RPC request on any path) as a line; any other MCP message, or a body
        that is not JSON-RPC, passes unrecorded."""
        message = rpc_request(body)
        call = tool_call_of(message) if message is not None else None
        if message is None or call is None:
            return
        mcp_session = request.headers.get(MCP_SESSION_HEADER)
        session = self.sessions.session_of_tool_call(call["params"], named, mcp_session)
        secrets = secrets_of(request.headers, message)
        answer = scrub(tool_answer_of(message.get("id"), passed), secrets)
        self.sessions.record(session, sent, SESSION_MCP_API, scrub(call, secrets), answer)

    async def _relay(self, request: web.Request, body: bytes) -> tuple[web.StreamResponse, Passed | None]:
        """Forward the request; stream the answer back chunk by chunk, keeping what passed with its times.
        An upstream that fails (refused, reset, a body cut short, a TLS error) fails the agent the same
        way: its connection is reset or closed without the answer's end (`cut_off`), one line says why, and
        what passed is recorded with the reason (nothing when no answer began). An agent that hangs up once
        every byte has passed, before the end of the chunked body (the openai SDK closes a stream at its
        `[DONE]` event), broke nothing."""
        assert self.client is not None
        loop = asyncio.get_running_loop()
        headers = {**forwarded_headers(request.headers), "Accept-Encoding": "identity"}
        url = self.upstream + request.path_qs
        started, response, passed, relayed = loop.time(), None, None, False
        try:
            async with self.client.request(
                request.method, url, data=body or None, headers=headers, allow_redirects=False
            ) as upstream:
                passed = Passed(upstream.status, upstream.headers.get("Content-Type", ""))
                answer_headers = forwarded_headers(upstream.headers)
                response = web.StreamResponse(status=upstream.status, headers=answer_headers)
                await response.prepare(request)
                try:
                    async for chunk in upstream.content.iter_any():
                        passed.keep(loop.time() - started, chunk, KEEP_RESPONSE_BYTES)
                        await response.write(chunk)
                except asyncio.CancelledError:  # the agent hung up mid-answer, or at its [DONE]
                    passed.broken = None if await all_passed(upstream) else AGENT_LEFT
                    return response, passed
                relayed = True
                await response.write_eof()
        except asyncio.CancelledError:  # the agent hung up (the server cancels its handler): so does this
            if passed is not None and not relayed:
                passed.broken = AGENT_LEFT
            return response or web.Response(status=499), passed
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            if relayed and response is not None:
                return response, passed  # every byte passed; the agent left before the body's end
            reason = f"{type(exc).__name__}: {exc}".rstrip(": ")
            log.error("%s %s: %s", request.method, request.path, reason)
            cut_off(request, was_reset(exc))
            if passed is not None:
                passed.broken = reason
            return response or web.Response(status=502), passed
        return response, passed


async def all_passed(upstream: aiohttp.ClientResponse) -> bool:
    """Whether the agent had the whole answer when it hung up: the openai SDK closes a stream at its
    `[DONE]` event, before the chunked body's end, so the upstream gets a moment to end with nothing more."""
    try:
        return await asyncio.wait_for(upstream.content.read(), END_GRACE_S) == b""
    except (TimeoutError, aiohttp.ClientError, OSError):
        return False


def was_reset(exc: BaseException) -> bool:
    """Whether the upstream reset the connection (rather than closing it, or never answering). aiohttp
    names a reset mid-body only in its payload error's text."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionResetError) or getattr(seen, "errno", None) == errno.ECONNRESET:
            return True
        if "ConnectionResetError(" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def cut_off(request: web.Request, reset: bool) -> None:
    """End the agent's connection as the upstream ended the recorder's: a reset (RST) for a reset, else
    closed after what passed (a chunked body without its last chunk, or no answer at all), so its client
    raises what it would have raised talking to the upstream directly. aiohttp's own end of the response
    then meets a closed transport and gives up quietly."""
    transport = request.transport
    if transport is None:
        return
    if reset:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        transport.abort()
    else:
        transport.close()


def build_app(recorder: Recorder) -> web.Application:
    app = web.Application(client_max_size=MAX_REQUEST_BYTES)
    app.on_startup.append(recorder.start)
    app.on_cleanup.append(recorder.stop)
    app.router.add_route("*", "/{tail:.*}", recorder.handle)
    return app
