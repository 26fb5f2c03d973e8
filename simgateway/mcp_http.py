"""The simulator's MCP endpoint over Streamable HTTP (`/mcp`) and over the 2024-11-05 HTTP+SSE transport
(GET `/sse` opens a session's stream, its messages POSTed to `/messages/`), routed by
simgateway/mcp_endpoint.py, which loads this module on first use: simgateway/mcp_server.py's server behind
the SDK's session manager and its SSE transport, one session ledger (a session holds `--mcp-session-mib`
of memory; an SSE session is open while its stream is) and the counts the tests compare the kit's rows
with (GET /v1/sim/mcp).

Why in the simulator's own process and port (through simgateway/asgi_bridge.py) rather than a uvicorn of
its own: one URL for the kit and its origin guard, one process for the sampler to measure, so an MCP
session's memory shows in the same target the capacity study reads.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator

from aiohttp import web
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from simgateway import memory
from simgateway.asgi_bridge import serve_asgi
from simgateway.knobs import Knobs
from simgateway.mcp_server import SimMcp


class McpHttp:
    """The simulated MCP server on the simulator's application, one SDK session per client session."""

    def __init__(self, knobs: Knobs, messages_path: str) -> None:
        """`messages_path`: where an HTTP+SSE session's endpoint event sends its client's messages."""
        sim = self.sim = SimMcp(knobs)
        self.ledger = sim.ledger
        self.manager = StreamableHTTPSessionManager(
            sim.server, json_response=knobs.mcp_json_response, session_idle_timeout=knobs.mcp_idle_timeout_s
        )
        # HTTP+SSE: the same server's behaviour and ledger; a call is timed from its dispatch to its result
        # (its POST is answered 202 at once, the result rides the session's stream)
        self.legacy = SimMcp(knobs, self.ledger)
        self.legacy.server.middleware.append(self.legacy.timed)
        self.sse = SseServerTransport(messages_path)
        self.sse_ids = itertools.count(1)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """One HTTP request of /mcp through the SDK; the session ledger kept from what it answered (a
        session opens when an initialize is answered with a session id, closes when its DELETE is)."""
        body = await request.read()
        if self.sim.knobs.mcp_initialize == "invalid":  # a fault: not JSON-RPC, before the SDK sees it
            return web.json_response({"jsonrpc": "1.0", "answer": "not JSON-RPC 2.0"})
        asked = request.headers.get(MCP_SESSION_ID_HEADER)
        started = time.perf_counter()
        response = await serve_asgi(self.manager.handle_request, request, body)
        if b'"tools/call"' in body:  # a tools/call POST: its time from the request read to the answer's end
            self.ledger.call_ms.append((time.perf_counter() - started) * 1000.0)
        given = response.headers.get(MCP_SESSION_ID_HEADER)
        if asked is None and given and response.status < 400 and given not in self.ledger.blocks:
            self.ledger.opened += 1
            self.ledger.blocks[given] = memory.allocate_touched(self.sim.knobs.mcp_session_mib)
        elif request.method == "DELETE" and asked in self.ledger.blocks and response.status < 400:
            self.ledger.closed += 1
            memory.free(self.ledger.blocks.pop(asked))
        elif asked in self.ledger.blocks and response.status == 404:  # the SDK ended it (idle)
            self.ledger.dropped += 1
            memory.free(self.ledger.blocks.pop(asked))
        return response

    async def handle_sse(self, request: web.Request) -> web.StreamResponse:
        """GET /sse: one HTTP+SSE session, open (and holding its memory) as long as its stream is."""
        return await serve_asgi(self._sse_session, request, b"")

    async def _sse_session(self, scope, receive, send) -> None:
        key = f"sse-{next(self.sse_ids)}"
        async with self.sse.connect_sse(scope, receive, send) as (read, write):
            self.ledger.opened += 1
            self.ledger.blocks[key] = memory.allocate_touched(self.sim.knobs.mcp_session_mib)
            try:
                server = self.legacy.server
                await server.run(read, write, server.create_initialization_options())
            finally:
                self.ledger.closed += 1
                memory.free(self.ledger.blocks.pop(key))

    async def handle_message(self, request: web.Request) -> web.StreamResponse:
        """POST /messages/?session_id=...: an HTTP+SSE session's message (202; its answer on the stream)."""
        return await serve_asgi(self.sse.handle_post_message, request, await request.read())

    async def stats(self, _request: web.Request) -> web.Response:
        return web.json_response(self.ledger.as_json())

    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group, held until the app's cleanup (simgateway/mcp_endpoint.py)."""
        async with self.manager.run():
            yield
            for block in self.ledger.blocks.values():
                memory.free(block)
