"""The simulator's MCP endpoint over Streamable HTTP (`/mcp`, routed by simgateway/mcp_endpoint.py, which
loads this module on first use): simgateway/mcp_server.py's server behind the SDK's session manager, its
session ledger (a session holds `--mcp-session-mib` of memory) and the counts the tests compare the
kit's rows with (GET /v1/sim/mcp).

Why in the simulator's own process and port (through simgateway/asgi_bridge.py) rather than a uvicorn of
its own: one URL for the kit and its origin guard, one process for the sampler to measure, so an MCP
session's memory shows in the same target the capacity study reads.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

from aiohttp import web
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from simgateway import memory
from simgateway.asgi_bridge import serve_asgi
from simgateway.knobs import Knobs
from simgateway.mcp_server import SimMcp


class McpHttp:
    """The simulated MCP server on the simulator's application, one SDK session per client session."""

    def __init__(self, knobs: Knobs) -> None:
        sim = self.sim = SimMcp(knobs)
        self.ledger = sim.ledger
        self.manager = StreamableHTTPSessionManager(
            sim.server, json_response=knobs.mcp_json_response, session_idle_timeout=knobs.mcp_idle_timeout_s
        )

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

    async def stats(self, _request: web.Request) -> web.Response:
        return web.json_response(self.ledger.as_json())

    async def running(self) -> AsyncIterator[None]:
        """The session manager's task group, held until the app's cleanup (simgateway/mcp_endpoint.py)."""
        async with self.manager.run():
            yield
            for block in self.ledger.blocks.values():
                memory.free(block)
