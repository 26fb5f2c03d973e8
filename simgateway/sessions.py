"""Idle agent sessions (the capacity study): create, get, list, prompt, delete, each holding real memory.

In `inprocess` mode an agent's memory is a touched block in the gateway; in `process` mode it is a forked
worker that touches its own block and reads the gateway's shared block. Must not sample memory itself:
the kit measures from outside.
"""

from __future__ import annotations

import asyncio
import gc
import itertools
import mmap
import os
import signal
import time
from dataclasses import dataclass, field

from aiohttp import web

from simgateway import memory
from simgateway.knobs import Knobs
from simgateway.lifeline import die_with_parent, kill_and_reap
from simgateway.llm import MockLLM, read_json


@dataclass
class Agent:
    """One agent session. `pid` is the process holding its memory (the gateway, or its worker)."""

    id: str
    run_id: str | None
    metadata: dict
    created_at: float
    ready_at: float
    pid: int
    status: str = "ready"
    closed_at: float | None = None
    prompts: int = 0
    block: mmap.mmap | None = field(default=None, repr=False)

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "status": self.status,
            "created_at": self.created_at,
            "ready_at": self.ready_at,
            "closed_at": self.closed_at,
            "run_id": self.run_id,
            "pid": self.pid,
            "metadata": self.metadata,
            "prompts": self.prompts,
        }


def fork_agent_worker(mib: float, shared: mmap.mmap | None) -> int:
    """Fork a worker that holds `mib` MiB of its own and maps the shared block; it waits to be killed.

    The child never returns into the event loop: it resets signals, drops inherited sockets, and ends
    only by SIGTERM/SIGKILL (DELETE, gateway shutdown) or by the parent-death signal.
    """
    parent = os.getpid()
    gc.freeze()  # a collection in the child would write into every tracked object: copy-on-write
    pid = os.fork()
    if pid:
        gc.unfreeze()
        return pid
    try:
        gc.disable()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        die_with_parent(parent)
        os.closerange(3, 65536)
        block = memory.allocate_touched(mib)  # noqa: F841  (held until the process ends)
        memory.read_every_page(shared)
        while True:
            signal.pause()
    finally:
        os._exit(0)


class Sessions:
    """The agent store and its HTTP handlers."""

    def __init__(self, knobs: Knobs, llm: MockLLM, shared: mmap.mmap | None) -> None:
        self.knobs = knobs
        self.llm = llm
        self.shared = shared
        self.agents: dict[str, Agent] = {}
        self.attempts = 0
        self.first_block: mmap.mmap | None = None
        self.first_paid = False
        self.retained: list[mmap.mmap | None] = []
        self._ids = itertools.count(1)

    async def create(self, request: web.Request) -> web.Response:
        t0 = asyncio.get_running_loop().time()
        created_at = time.time()
        try:
            body = await read_json(request) if request.can_read_body else {}
        except ValueError as e:
            return web.json_response({"error": str(e)}, status=400)
        self.attempts += 1
        fail_at = self.knobs.fail_agent_at
        if fail_at is not None and self.attempts >= fail_at:
            return web.json_response(
                {"error": f"agent start-up failed (create #{self.attempts})"}, status=500
            )
        delay = t0 + self.knobs.agent_startup_ms / 1000.0 - asyncio.get_running_loop().time()
        if delay > 0:
            await asyncio.sleep(delay)
        agent = self._start(body, created_at)
        self.agents[agent.id] = agent
        return web.json_response(agent.as_json(), status=201)

    def _start(self, body: dict, created_at: float) -> Agent:
        if not self.first_paid:
            self.first_block = memory.allocate_touched(self.knobs.first_agent_mib)
            self.first_paid = True
        block, pid = None, os.getpid()
        if self.knobs.agent_mode == "process":
            pid = fork_agent_worker(self.knobs.agent_mib, self.shared)
        else:
            block = memory.allocate_touched(self.knobs.agent_mib)
        aid = f"agent-{next(self._ids)}"
        meta = body.get("metadata")
        return Agent(
            aid,
            body.get("run_id"),
            meta if isinstance(meta, dict) else {},
            created_at,
            time.time(),
            pid,
            block=block,
        )

    def _find(self, request: web.Request) -> Agent | None:
        return self.agents.get(request.match_info["agent_id"])

    async def get(self, request: web.Request) -> web.Response:
        agent = self._find(request)
        if agent is None:
            return _not_found(request.match_info["agent_id"])
        return web.json_response(agent.as_json())

    async def list(self, request: web.Request) -> web.Response:
        run_id, status = request.query.get("run_id"), request.query.get("status")
        rows = [
            a.as_json()
            for a in self.agents.values()
            if (run_id is None or a.run_id == run_id) and (status is None or a.status == status)
        ]
        return web.json_response({"object": "list", "data": rows})

    async def delete(self, request: web.Request) -> web.Response:
        agent = self._find(request)
        if agent is None:
            return _not_found(request.match_info["agent_id"])
        if agent.status != "closed":
            self._close(agent)
        return web.json_response(agent.as_json())

    def _close(self, agent: Agent) -> None:
        memory.free(agent.block)
        agent.block = None
        if agent.pid != os.getpid():
            kill_and_reap(agent.pid, reap=True)
        agent.status, agent.closed_at = "closed", time.time()
        self.retained.append(memory.allocate_touched(self.knobs.retain_mib_per_closed))

    async def prompt(self, request: web.Request) -> web.Response:
        agent = self._find(request)
        if agent is None:
            return _not_found(request.match_info["agent_id"])
        if agent.status != "ready":
            return web.json_response({"error": f"agent {agent.id} is {agent.status}"}, status=409)
        try:
            body = await read_json(request)
        except ValueError as e:
            return web.json_response({"error": str(e)}, status=400)
        text, tokens = await self.llm.complete([str(body.get("input", ""))], None)
        agent.prompts += 1
        model = self.knobs.model or "sim-model"
        return web.json_response(
            {"agent_id": agent.id, "output": text, "model": model, "usage": self.llm.usage(tokens)}
        )

    def stop_all(self) -> None:
        """Kill every agent worker process (gateway shutdown)."""
        for agent in self.agents.values():
            if agent.status != "closed" and agent.pid != os.getpid():
                kill_and_reap(agent.pid, reap=True)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/agents", self.create)
        app.router.add_get("/v1/agents", self.list)
        app.router.add_get("/v1/agents/{agent_id}", self.get)
        app.router.add_delete("/v1/agents/{agent_id}", self.delete)
        app.router.add_post("/v1/agents/{agent_id}/prompt", self.prompt)


def _not_found(agent_id: str) -> web.Response:
    return web.json_response({"error": f"agent {agent_id} not found"}, status=404)
