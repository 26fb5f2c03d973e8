"""The MCP endpoint's routes, with the SDK loaded on the first MCP request rather than at start-up.

Why: the MCP server's imports (the SDK's pydantic models, and then jsonschema) took 3.7 s of a 4.3 s
start-up on this 2-core host and grew the simulator from 38 to 99 MiB; their 190,000 long-lived objects
made each full garbage collection cost 195 ms instead of 34 ms, landing on whatever chat stream was due. A
simulator that only serves chat (most runs, most tests) now never pays for MCP; one that serves MCP pays
once, on its first request, or before its ready line with --mcp-preload.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from simgateway.knobs import Knobs

MCP_PATH = "/mcp"
SSE_PATH = "/sse"  # HTTP+SSE (2024-11-05): GET opens a session's stream; its messages go to MESSAGES_PATH
MESSAGES_PATH = "/messages/"
STATS_PATH = "/v1/sim/mcp"


class LazyMcp:
    """Routes /mcp, /sse, /messages/ and /v1/sim/mcp to a `mcp_http.McpHttp` built on first use.

    The SDK's session manager runs inside an anyio task group, which must be entered and left by one task:
    a task of its own holds it from the first request to the application's cleanup."""

    def __init__(self, knobs: Knobs) -> None:
        self.knobs = knobs
        self._mcp: Any = None
        self._loading = asyncio.Lock()
        self._stop = asyncio.Event()
        self._holder: asyncio.Task[None] | None = None

    async def _loaded(self) -> Any:
        async with self._loading:
            if self._mcp is None:
                module = await asyncio.to_thread(importlib.import_module, "simgateway.mcp_http")
                gc.freeze()  # the SDK lives as long as the process: keep it out of every collection
                mcp, ready = module.McpHttp(self.knobs, MESSAGES_PATH), asyncio.Event()
                self._holder = asyncio.create_task(self._hold(mcp, ready))
                await ready.wait()
                self._mcp = mcp
        return self._mcp

    async def _hold(self, mcp: Any, ready: asyncio.Event) -> None:
        async for _ in mcp.running():
            ready.set()
            await self._stop.wait()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        return await (await self._loaded()).handle(request)

    async def handle_sse(self, request: web.Request) -> web.StreamResponse:
        return await (await self._loaded()).handle_sse(request)

    async def handle_message(self, request: web.Request) -> web.StreamResponse:
        return await (await self._loaded()).handle_message(request)

    async def stats(self, request: web.Request) -> web.Response:
        return await (await self._loaded()).stats(request)

    async def _lifetime(self, _app: web.Application) -> AsyncIterator[None]:
        yield
        self._stop.set()
        if self._holder is not None:
            await self._holder

    def add_routes(self, app: web.Application) -> None:
        for method in ("GET", "POST", "DELETE"):
            app.router.add_route(method, MCP_PATH, self.handle)
        app.router.add_get(SSE_PATH, self.handle_sse)  # a POST to it is 405: the kit's cue to fall back
        app.router.add_post(MESSAGES_PATH, self.handle_message)
        app.router.add_get(STATS_PATH, self.stats)
        app.cleanup_ctx.append(self._lifetime)
        if self.knobs.mcp_preload:  # before the ready line: a timed run must not spend its first seconds here
            app.on_startup.append(self._preload)

    async def _preload(self, _app: web.Application) -> None:
        await self._loaded()
