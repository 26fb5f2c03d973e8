"""Task board with a dispatcher (the rounds study): queued -> running -> done/failed/archived.

Every dispatch interval the dispatcher starts at most (max_in_progress - running) queued tasks, FIFO, each
in its own worker process (simgateway.task_worker) that reports usage on stdout. Must not run task work in
the gateway process itself.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import json
import mmap
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field

from aiohttp import web

from contract.child_env import kit_module_command, kit_module_env
from simgateway import memory
from simgateway.knobs import Knobs
from simgateway.lifeline import kill_and_reap
from simgateway.llm import DEFAULT_MODEL, read_json
from simgateway.usage import TaskUsage

HELPER_CODE = "import sys, time; time.sleep(float(sys.argv[1]))"


@dataclass
class Task:
    id: str
    title: str
    prompt: str
    tags: list[str]
    submitted_at: float
    model: str
    max_tokens: int | None = None  # passed to the task's LLM calls when the submitter gave one
    status: str = "queued"
    started_at: float | None = None
    finished_at: float | None = None
    worker_pid: int | None = None
    usage: TaskUsage = field(default_factory=TaskUsage)
    error: str | None = None

    def as_json(self) -> dict:
        return {
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "submitted_at": self.submitted_at,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "worker_pid": self.worker_pid,
            "model": self.model,
            "usage": asdict(self.usage),
            "error": self.error,
            "tags": self.tags,
        }


class Board:
    """The task store, its dispatcher loop and its HTTP handlers. `url` is set once the server listens."""

    def __init__(self, knobs: Knobs, rng: random.Random) -> None:
        self.knobs = knobs
        self.rng = rng
        self.url = ""
        self.tasks: dict[str, Task] = {}
        self.queue: collections.deque[str] = collections.deque()
        self.running: dict[str, asyncio.Task] = {}
        self.procs: dict[str, asyncio.subprocess.Process] = {}
        self.helpers: dict[asyncio.Task, asyncio.subprocess.Process | None] = {}
        self.leaked: list[mmap.mmap | None] = []
        self._ids = itertools.count(1)
        self._dispatcher: asyncio.Task | None = None

    # -- dispatcher -------------------------------------------------------------------------------------
    def start(self) -> None:
        self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch_forever())

    async def _dispatch_forever(self) -> None:
        """Tick on a fixed monotonic grid (no drift), starting what the free slots allow."""
        loop = asyncio.get_running_loop()
        grid0, interval = loop.time(), self.knobs.dispatch_interval_s
        for tick in itertools.count(1):
            await asyncio.sleep(max(0.0, grid0 + tick * interval - loop.time()))
            self.dispatch_once()

    def dispatch_once(self) -> None:
        free = self.knobs.max_in_progress - len(self.running)
        while free > 0 and self.queue:
            task = self.tasks[self.queue.popleft()]
            task.status, task.started_at = "running", time.time()
            self.running[task.id] = asyncio.get_running_loop().create_task(self._run(task))
            if self.knobs.task_helper_s > 0:
                helper = asyncio.get_running_loop().create_task(self._run_helper())
                self.helpers[helper] = None
            free -= 1

    async def _run_helper(self) -> None:
        """A short-lived child of the gateway beside the task's worker, as a real gateway runs a CLI call
        (git, a shell) per task: what per-worker memory must list apart, not count as a worker."""
        me = asyncio.current_task()
        assert me is not None  # run as a task by dispatch_once
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-c", HELPER_CODE, repr(self.knobs.task_helper_s)
            )
            self.helpers[me] = proc
            await proc.wait()
        except OSError:
            pass  # a helper that cannot start is no task's failure
        finally:
            self.helpers.pop(me, None)

    async def _run(self, task: Task) -> None:
        fail = self.knobs.task_fail_rate > 0 and self.rng.random() < self.knobs.task_fail_rate
        try:
            proc = await asyncio.create_subprocess_exec(
                *self._worker_argv(task, fail),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                env=kit_module_env(),
            )
            self.procs[task.id] = proc
            task.worker_pid = proc.pid
            await _hand_prompt(proc, task.prompt)
            result = await self._read_worker(task, proc)
            code = await proc.wait()
        except OSError as e:
            result, code = {"event": "failed", "error": f"worker did not start: {e}"}, None
        finally:
            self.running.pop(task.id, None)
            self.procs.pop(task.id, None)
        self._finish(task, result, code)

    def _worker_argv(self, task: Task, fail: bool) -> list[str]:
        k = self.knobs
        assert task.started_at is not None  # set when the task was dispatched
        argv = kit_module_command(
            "simgateway.task_worker",
            "--url",
            self.url,
            "--gateway-pid",
            str(os.getpid()),
            "--task-id",
            task.id,
            "--mib",
            str(k.worker_mib),
            "--ramp-s",
            str(k.worker_ramp_s),
            "--calls",
            str(k.task_llm_calls),
            "--until",
            repr(task.started_at + k.task_seconds),
            "--model",
            task.model,
        )
        argv += ["--max-tokens", str(task.max_tokens)] if task.max_tokens is not None else []
        return argv + (["--fail"] if fail else []) + (["--detach"] if k.detach_workers else [])

    @staticmethod
    async def _read_worker(task: Task, proc: asyncio.subprocess.Process) -> dict | None:
        """Read the worker's JSON lines until EOF; the last `done`/`failed` record is the result."""
        result = None
        assert proc.stdout is not None  # started with stdout=PIPE
        async for line in proc.stdout:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("event") == "started":
                task.worker_pid = record["pid"]
            elif record.get("event") in ("done", "failed"):
                result = record
        return result

    def _finish(self, task: Task, result: dict | None, code: int | None) -> None:
        if task.status == "archived":
            return
        task.finished_at = time.time()
        if result is None:
            task.status, task.error = "failed", f"worker exited (code {code}) without a result"
        else:
            task.status, task.error = result["event"], result.get("error")
            task.usage = TaskUsage(**result.get("usage", {}))
        self.leaked.append(memory.allocate_touched(self.knobs.leak_mib_per_task))

    def stop(self) -> None:
        """Stop dispatching and kill every worker (reported pid first: detached ones are not our children)
        and helper."""
        if self._dispatcher is not None:
            self._dispatcher.cancel()
        for task_id, proc in list(self.procs.items()):
            pid = self.tasks[task_id].worker_pid
            if pid is not None and pid != proc.pid:
                kill_and_reap(pid, reap=False)
            kill_and_reap(proc.pid, reap=False)
        for runner in self.running.values():
            runner.cancel()
        for helper, started in list(self.helpers.items()):
            if started is not None:
                kill_and_reap(started.pid, reap=False)
            helper.cancel()

    # -- HTTP ---------------------------------------------------------------------------------------------
    async def submit(self, request: web.Request) -> web.Response:
        try:
            body = await read_json(request)
        except ValueError as e:
            return web.json_response({"error": str(e)}, status=400)
        tags = body.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            return web.json_response({"error": "'tags' must be a list of strings"}, status=400)
        max_tokens = body.get("max_tokens")
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
            return web.json_response({"error": "'max_tokens' must be a whole number"}, status=400)
        task = Task(
            f"task-{next(self._ids)}",
            str(body.get("title", "")),
            str(body.get("prompt", "")),
            tags,
            time.time(),
            self.knobs.model or body.get("model") or DEFAULT_MODEL,
            max_tokens,
        )
        self.tasks[task.id] = task
        self.queue.append(task.id)
        return web.json_response(
            {"id": task.id, "status": task.status, "submitted_at": task.submitted_at, "tags": task.tags},
            status=201,
        )

    async def get(self, request: web.Request) -> web.Response:
        task = self.tasks.get(request.match_info["task_id"])
        if task is None:
            return _not_found(request.match_info["task_id"])
        return web.json_response(task.as_json())

    async def list(self, request: web.Request) -> web.Response:
        tag, status = request.query.get("tag"), request.query.get("status")
        rows = [
            t.as_json()
            for t in self.tasks.values()
            if (tag is None or tag in t.tags) and (status is None or t.status == status)
        ]
        return web.json_response({"object": "list", "data": rows})

    async def archive(self, request: web.Request) -> web.Response:
        task = self.tasks.get(request.match_info["task_id"])
        if task is None:
            return _not_found(request.match_info["task_id"])
        if task.status == "queued":
            self.queue.remove(task.id)
        proc = self.procs.get(task.id)
        task.status = "archived"
        if proc is not None:
            if task.worker_pid not in (None, proc.pid):
                kill_and_reap(task.worker_pid, reap=False)
            kill_and_reap(proc.pid, reap=False)
        return web.json_response(task.as_json())

    def counts(self) -> dict[str, int]:
        return collections.Counter(t.status for t in self.tasks.values())

    async def inspect(self, request: web.Request) -> web.Response:
        c = self.counts()
        workers = [{"task_id": tid, "pid": self.tasks[tid].worker_pid} for tid in self.running]
        return web.json_response(
            {
                "queue_length": len(self.queue),
                "in_progress": len(self.running),
                "done": c["done"],
                "failed": c["failed"],
                "archived": c["archived"],
                "max_in_progress": self.knobs.max_in_progress,
                "dispatch_interval_s": self.knobs.dispatch_interval_s,
                "workers": workers,
            }
        )

    def add_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/tasks", self.submit)
        app.router.add_get("/v1/tasks", self.list)
        app.router.add_get("/v1/tasks/{task_id}", self.get)
        app.router.add_delete("/v1/tasks/{task_id}", self.archive)
        app.router.add_get("/v1/board/inspect", self.inspect)


async def _hand_prompt(proc: asyncio.subprocess.Process, prompt: str) -> None:
    """The prompt goes to the worker on its stdin: a command-line argument is capped at 128 KiB, and an
    agent's prompt (a 225 K-token context) is megabytes."""
    assert proc.stdin is not None  # started with stdin=PIPE
    try:
        proc.stdin.write(prompt.encode())
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the worker died first: _read_worker reports it without a result
    finally:
        proc.stdin.close()


def _not_found(task_id: str) -> web.Response:
    return web.json_response({"error": f"task {task_id} not found"}, status=404)
