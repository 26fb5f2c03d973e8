"""The gateway process: wires the mock LLM, agent sessions and task board into one aiohttp server.

Owns start-up (shared memory before any fork, the ready line) and shutdown (every worker stopped, exit 0).
Must not hold protocol logic: that lives in llm.py, sessions.py, board.py and mcp_server.py with its HTTP
endpoint mcp_http.py (mcp_endpoint.py loads both on first use).
"""

from __future__ import annotations

import asyncio
import mmap
import os
import random
import signal
import sys
import time

from aiohttp import web

from simgateway import memory
from simgateway.board import Board
from simgateway.faults import FaultGate
from simgateway.hostile import hostile_middleware
from simgateway.knobs import Knobs
from simgateway.llm import DEFAULT_MODEL, MockLLM
from simgateway.mcp_endpoint import LazyMcp
from simgateway.sessions import Sessions

READY_PREFIX = "simgateway listening on "

# A request body the model takes: a 10 M-token context (the kit's ceiling, scenarios/ceilings.py) is about
# 40 MB of JSON; aiohttp's default, 1 MiB, refused a 1 M-token prompt (413).
MAX_BODY_BYTES = 64 * 1024 * 1024


def build_app(knobs: Knobs, shared: mmap.mmap | None) -> tuple[web.Application, Board, Sessions]:
    rng = random.Random(knobs.seed)
    llm = MockLLM(knobs, FaultGate(knobs, rng))
    sessions, board = Sessions(knobs, llm, shared), Board(knobs, rng)
    started = time.time()

    async def health(_: web.Request) -> web.Response:
        body = {"status": "ok", "pid": os.getpid(), "uptime_s": time.time() - started}
        return web.json_response(body, status=knobs.health_status)

    async def models(_: web.Request) -> web.Response:
        model = {
            "id": knobs.model or DEFAULT_MODEL,
            "object": "model",
            "created": int(started),
            "owned_by": "simgateway",
        }
        return web.json_response({"object": "list", "data": [model]})

    middlewares = [hostile_middleware(knobs.hostile, knobs.hostile_bytes)] if knobs.hostile else []
    app = web.Application(middlewares=middlewares, client_max_size=MAX_BODY_BYTES)
    app.router.add_get("/health", health)
    app.router.add_get("/v1/models", models)
    app.router.add_post("/v1/chat/completions", llm.chat_completions)
    app.router.add_post("/v1/responses", llm.responses)
    app.router.add_get("/v1/sim/streams", llm.stream_timings)
    app.router.add_get("/v1/sim/calls", llm.call_counts)
    sessions.add_routes(app)
    board.add_routes(app)
    LazyMcp(knobs).add_routes(app)
    return app, board, sessions


LISTEN_BACKLOG = 2048


async def serve(knobs: Knobs) -> None:
    """Listen, announce the URL on stdout, run until SIGTERM/SIGINT, then stop every child."""
    shared = memory.allocate_touched(knobs.shared_mib)  # before any fork, so workers share its pages
    app, board, sessions = build_app(knobs, shared)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    # aiohttp's backlog of 128 resets connections when 1,000 agents connect within 2 s (measured)
    site = web.TCPSite(runner, knobs.bind, knobs.port, backlog=LISTEN_BACKLOG)
    await site.start()
    port = runner.addresses[0][1]
    board.url = f"http://{knobs.bind}:{port}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    board.start()
    sys.stdout.write(f"{READY_PREFIX}{board.url}\n")
    sys.stdout.flush()
    try:
        await stop.wait()
    finally:
        board.stop()
        sessions.stop_all()
        await runner.cleanup()
