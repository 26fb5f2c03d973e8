"""The Hermes Kanban board's stats as a small JSON server for the sampler (`--queue-url`): queue by
status, the oldest ready task's age, running tasks, and with a run id that run's workers and their
memory (the sampler's own process-tree reading), refreshed in the background.

Reads the board through the CLI and the workers' processes; it records nothing.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agents.base import one_line
from agents.gateways.kanban_cli import KanbanCli, KanbanError, run_tag
from sampler.selection import TargetNotFound
from sampler.targets import ProcessTreeTarget

WAITING = ("triage", "todo", "scheduled", "ready")  # statuses of tasks no worker has taken yet


def board_stats(cli: KanbanCli, run_id: str | None = None) -> dict:
    """Queue by status, oldest ready age and running count for the whole board (what the sampler
    records), and with a run id that run's tasks by status and its live workers' memory."""
    stats = cli.json_object("stats")
    by_status = dict(stats.get("by_status") or {})
    doc = {
        "by_status": by_status,
        "queue_length": int(by_status.get("ready", 0)),
        "waiting": sum(int(by_status.get(s, 0)) for s in WAITING),
        "in_progress": int(by_status.get("running", 0)),
        "oldest_ready_age_s": stats.get("oldest_ready_age_seconds"),
        "by_assignee": stats.get("by_assignee") or {},
        "now": stats.get("now"),
    }
    if run_id:
        doc["run"] = run_stats(cli, run_id)
    return doc


def run_stats(cli: KanbanCli, run_id: str) -> dict:
    """One run's tasks by status and, for its running tasks, the worker pid and resident memory of its
    process tree (the dispatcher spawns `hermes -p PROFILE chat -q "work kanban task ID"` per task)."""
    tag = run_tag(run_id)
    listed = [t for t in cli.json("list", "--tenant", tag) if isinstance(t, dict) and t.get("tenant") == tag]
    by_status: dict[str, int] = {}
    for board_task in listed:
        status = str(board_task.get("status"))
        by_status[status] = by_status.get(status, 0) + 1
    running = (worker_of(cli, str(t["id"])) for t in listed if t.get("status") == "running")
    workers = [w for w in running if w is not None]
    alive = [w for w in workers if w["alive"]]
    return {
        "tag": tag,
        "by_status": by_status,
        "in_progress": by_status.get("running", 0),
        "workers": workers,
        "worker_count": len(alive),
        "worker_rss_bytes": sum(w["tree_rss_bytes"] for w in alive),
    }


def worker_of(cli: KanbanCli, task_id: str) -> dict | None:
    shown = cli.json("show", task_id)
    runs = (shown.get("runs") or []) if isinstance(shown, dict) else []
    pid = runs[-1].get("worker_pid") if runs else None
    if not pid:
        return None
    rss = tree_rss_bytes(int(pid))
    return {"task_id": task_id, "pid": pid, "alive": rss is not None, "tree_rss_bytes": rss or 0}


def tree_rss_bytes(pid: int) -> int | None:
    """RSS of a worker and its children (tools it started), read as the sampler reads a target's tree;
    None once it is gone (a crashed worker stays `running` on the board until the dispatcher's next
    tick notices)."""
    try:
        tree = ProcessTreeTarget(pid)
    except TargetNotFound:
        return None
    try:
        reading = tree.read()
    finally:
        tree.close()
    return reading.rss_bytes if tree.alive else None


class StatsCache:
    """The latest board stats, refreshed in the background so the sampler's 1 Hz reads never wait on
    a CLI call (each takes ~0.25 s of CPU)."""

    def __init__(self, cli: KanbanCli, run_id: str | None, refresh_s: float) -> None:
        self.cli, self.run_id, self.refresh_s = cli, run_id, refresh_s
        self.doc: dict | None = None
        self.error: str | None = None

    def refresh(self) -> None:
        started = time.time()  # the board as of the read's start: its age counts the CLI calls' time
        try:
            doc = board_stats(self.cli, self.run_id)
            doc["read_ts"] = started
            self.doc, self.error = doc, None
        except KanbanError as exc:
            self.error = one_line(exc)

    def served(self) -> dict:
        """The latest stats with their age now (the sampler records it; the report marks a reading older
        than two sampler intervals stale: the board has moved on since) and the refresh interval."""
        assert self.doc is not None  # the handler answers 503 until the first read
        age = round(time.time() - self.doc["read_ts"], 3)
        return {**self.doc, "age_s": age, "refresh_s": self.refresh_s, "error": self.error}

    def loop(self) -> None:
        while True:
            self.refresh()
            time.sleep(self.refresh_s)


def stats_handler(cache: StatsCache) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/health"):
                self.answer(200, {"ok": True})
            elif cache.doc is None:
                self.answer(503, {"error": cache.error or "no stats read yet"})
            else:
                self.answer(200, cache.served())

        def answer(self, status: int, doc: dict) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:  # the sampler reads every second: no access log
            pass

    return Handler


def serve_stats(port: int, cli: KanbanCli, run_id: str | None, refresh_s: float) -> None:
    """Serve the board stats as JSON on 127.0.0.1:PORT (any path; /health answers at once)."""
    cache = StatsCache(cli, run_id, refresh_s)
    cache.refresh()
    threading.Thread(target=cache.loop, daemon=True).start()
    server = ThreadingHTTPServer(("127.0.0.1", port), stats_handler(cache))
    print(f"hermes-kanban stats on http://127.0.0.1:{port}/stats", file=sys.stderr, flush=True)
    server.serve_forever()
