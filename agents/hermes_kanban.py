"""Hermes Kanban agent: board tasks created through the `hermes kanban` CLI, tagged with the run id (tenant
`loadkit-<run id>`), followed to a terminal state, board stats for the sampler, cleanup of tagged tasks only.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psutil
from locust import constant, tag, task

from agents.base import TERMINAL_STATUSES, KitAgent, one_line, paced, thinking
from agents.pacing import pacing_of
from contract.cli import positive_duration
from contract.records import RequestRecord, TaskRecord

log = logging.getLogger(__name__)

TAG_PREFIX = "loadkit-"
# Hermes statuses that end a task for the kit; triage/todo/scheduled/ready/running/review keep polling.
# `blocked` waits for a human (or the dispatcher's failure breaker tripped): for a load run the task failed.
TERMINAL = {"done": "done", "blocked": "failed", "archived": "cancelled"}
WAITING = ("triage", "todo", "scheduled", "ready")
CLI_TIMEOUT_S = 60.0


class KanbanError(Exception):
    """A `hermes kanban` call that failed; Hermes exits 0 on most errors, so the output decides."""


def run_tag(run_id: str) -> str:
    """The tenant every task of this run carries: `list --tenant` filters on it exactly, the dashboard
    shows it, and the dispatcher hands it to workers (HERMES_TENANT), so it survives every edit path."""
    if not run_id or not run_id.strip():
        raise KanbanError("refusing an empty run id: it would tag nothing apart")
    return f"{TAG_PREFIX}{run_id}"


def run_title(run_id: str, agent_id: str) -> str:
    """A title prefix a human sees on the board; informative only, the tenant is the tag checked."""
    return f"[loadkit {run_id}] agent {agent_id}"


@dataclass(frozen=True)
class KanbanCli:
    """How to call the board: the command (may be `uv run hermes`, a venv path...) and the board slug."""

    command: tuple[str, ...] = ("hermes",)
    board: str | None = None
    timeout_s: float = CLI_TIMEOUT_S

    @classmethod
    def of(cls, command: str, board: str | None = None, timeout_s: float = CLI_TIMEOUT_S) -> KanbanCli:
        return cls(tuple(shlex.split(command)), board or None, timeout_s)

    def argv(self, *args: str) -> list[str]:
        board = ["--board", self.board] if self.board else []
        return [*self.command, "kanban", *board, *args]

    def run(self, *args: str) -> str:
        """Run one subcommand and return its stdout; raise KanbanError with stderr's last line when
        it printed nothing (Hermes reports `no such task`, unknown boards... on stderr with exit 0)."""
        try:
            done = subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            raise KanbanError(f"timeout: no answer in {self.timeout_s:g} s") from None
        except OSError as exc:
            raise KanbanError(f"cannot run {self.command[0]!r}: {exc}") from None
        if done.returncode != 0 or (not done.stdout.strip() and done.stderr.strip()):
            lines = done.stderr.strip().splitlines() or [f"exit code {done.returncode}"]
            raise KanbanError(one_line(lines[-1]))
        return done.stdout

    def json(self, *args: str) -> dict | list:
        return parse_json(self.run(*args, "--json"))

    def json_object(self, *args: str) -> dict:
        doc = self.json(*args)
        if not isinstance(doc, dict):
            raise KanbanError(f"`hermes kanban {' '.join(args)} --json`: expected an object, got a list")
        return doc


def parse_json(text: str) -> dict | list:
    """The JSON document in a CLI's stdout, tolerating a banner line printed before it."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise KanbanError(f"expected JSON, got {one_line(text, 80) or 'nothing'}")
    try:
        return json.loads(text[min(starts) :])
    except ValueError:
        raise KanbanError(f"expected JSON, got {one_line(text, 80)}") from None


class HermesKanbanAgent(KitAgent):
    """Creates one board task at a time and waits for a worker to end it, like a user on a board."""

    weight = 1
    wait_time = thinking(constant(0.5))
    task_agent = True  # rounds run only agents that work tasks

    def on_start(self) -> None:
        # No HTTP client: the transport is the CLI (--host names the stats sidecar, for the sampler).
        if pacing_of(self.environment) is not None:
            self.wait_time = lambda: 0  # type: ignore[method-assign] # paced: the schedule spaces the work
        self.cli = KanbanCli.of(
            self.settings.hermes_command,
            self.settings.kanban_board,
            self.settings.request_timeout,
        )
        self.created: list[str] = []

    def on_stop(self) -> None:
        if self.settings.cleanup and self.created:
            self.archive_own()
        super().on_stop()

    @tag("kanban", "tasks")
    @task
    @paced
    def submit_and_wait(self) -> None:
        row = self.submit(round_no=self.round)
        if row is not None:
            self.follow(row)

    def submit(self, round_no: int | None = None) -> TaskRecord | None:
        """Create a tagged task; its id is remembered for cleanup before anything else can fail."""
        draw = self.workload.next_request(self.settings.prompt or "Do a small task.", self.arrival)
        args = ["create", run_title(self.run_id, self.agent_id), "--tenant", run_tag(self.run_id)]
        args += ["--body", draw.text, "--created-by", "loadkit"]
        assignee = self.settings.kanban_assignee
        args += ["--assignee", assignee] if assignee else []
        submitted = time.time()
        created = self.call("kanban.create", args, json_out=True)
        if not isinstance(created, dict) or not created.get("id"):
            return None
        row = TaskRecord(task_id=str(created["id"]), agent_id=self.agent_id, round=round_no)
        row.submitted_ts = float(created.get("created_at") or submitted)
        self.created.append(row.task_id)
        return row

    def follow(self, row: TaskRecord) -> TaskRecord:
        """Poll to a terminal status (or --task-timeout) and record the row."""
        self.poll_task(row, self.poll_once)
        row.fill_durations()
        self.record(row)
        return row

    def poll_once(self, row: TaskRecord) -> None:
        shown = self.call("kanban.show", ["show", row.task_id], task_id=row.task_id, json_out=True)
        if isinstance(shown, dict):
            apply_kanban_state(row, shown)

    def archive_own(self) -> None:
        """Archive this agent's tasks, re-checked first: only ids that the board still lists under this
        run's tenant are archived, so a mistaken id can never reach a task someone else owns."""
        tag = run_tag(self.run_id)
        listed = self.call("kanban.list", ["list", "--tenant", tag], json_out=True)
        if not isinstance(listed, list):
            return
        tagged = {str(t.get("id")) for t in listed if isinstance(t, dict) and t.get("tenant") == tag}
        ids = [task_id for task_id in self.created if task_id in tagged]
        skipped = [task_id for task_id in self.created if task_id not in tagged]
        if skipped:
            log.info("loadkit: not archiving %s (archived already or not tagged %s)", " ".join(skipped), tag)
        if ids:
            out = self.call("kanban.archive", ["archive", *ids], task_id=" ".join(ids))
            if out is not None:
                self.created = [t for t in self.created if t not in archived_ids(out)]

    def call(self, operation: str, args: list[str], task_id: str | None = None, json_out: bool = False):
        """One timed CLI call reported as a request row; returns stdout (or its JSON), None on failure."""
        record = RequestRecord(ts=time.time(), agent_id=self.agent_id, operation=operation, task_id=task_id)
        started = time.perf_counter()
        result = None
        try:
            result = self.cli.json(*args) if json_out else self.cli.run(*args)
            if operation == "kanban.archive" and isinstance(result, str):
                check_archived(result, args[1:])
        except KanbanError as exc:
            record.ok, record.error = False, one_line(exc)
            record.error_kind = "timeout" if str(exc).startswith("timeout") else "protocol"
            result = None
        record.latency_ms = (time.perf_counter() - started) * 1000.0
        self.report(record)
        return result


def apply_kanban_state(row: TaskRecord, shown: dict) -> None:
    """Copy `kanban show --json` into the row: status, the board's own times (whole seconds, one clock),
    the latest run's worker pid and error."""
    board_task = shown.get("task") or {}
    runs = shown.get("runs") or []
    last_run = runs[-1] if runs else {}
    status = str(board_task.get("status"))
    row.submitted_ts = _ts(board_task.get("created_at")) or row.submitted_ts
    row.worker_pid = last_run.get("worker_pid") or row.worker_pid
    if status == "running" and row.started_ts is None:
        row.started_ts = time.time()  # our clock until the board's times replace it at the end
    if status in TERMINAL and row.status not in TERMINAL_STATUSES:
        row.status, row.finished_ts = TERMINAL[status], time.time()
        started = _ts(board_task.get("started_at")) or _ts(last_run.get("started_at"))
        finished = _ts(board_task.get("completed_at")) or _ts(last_run.get("ended_at"))
        row.adopt_server_times(started, finished or last_event_ts(shown))
    if status in ("blocked", "archived"):
        reason = last_run.get("error") or last_run.get("summary") or last_event_reason(shown)
        row.error = one_line(reason or f"board status {status}")


def last_event_ts(shown: dict) -> float | None:
    events = shown.get("events") or []
    return _ts(events[-1].get("created_at")) if events else None


def last_event_reason(shown: dict) -> str | None:
    events = shown.get("events") or []
    return (events[-1].get("payload") or {}).get("reason") if events else None


def _ts(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def archived_ids(out: str) -> set[str]:
    """Ids in `Archived t_x` lines: the CLI's only sign of success (it exits 0 on `cannot archive`)."""
    words = [line.split() for line in out.splitlines()]
    return {w[1] for w in words if len(w) > 1 and w[0] == "Archived"}


def check_archived(out: str, wanted: list[str]) -> None:
    missing = [task_id for task_id in wanted if task_id not in archived_ids(out)]
    if missing:
        raise KanbanError(f"not archived: {' '.join(missing)}")


def cleanup(run_id: str, cli: KanbanCli | None = None) -> list[str]:
    """Archive every task tagged with `run_id` and nothing else (a crashed run's leftovers); returns
    the archived ids. Each listed task's tenant is checked again before its id is passed on."""
    cli = cli or KanbanCli()
    tag = run_tag(run_id)
    listed = cli.json("list", "--tenant", tag)
    ids = [str(t["id"]) for t in listed if isinstance(t, dict) and t.get("tenant") == tag and t.get("id")]
    if not ids:
        return []
    out = cli.run("archive", *ids)
    check_archived(out, ids)
    return ids


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
        "worker_rss_bytes": sum(w["rss_bytes"] for w in alive),
    }


def worker_of(cli: KanbanCli, task_id: str) -> dict | None:
    shown = cli.json("show", task_id)
    runs = (shown.get("runs") or []) if isinstance(shown, dict) else []
    pid = runs[-1].get("worker_pid") if runs else None
    if not pid:
        return None
    rss = tree_rss_bytes(int(pid))
    return {"task_id": task_id, "pid": pid, "alive": rss is not None, "rss_bytes": rss or 0}


def tree_rss_bytes(pid: int) -> int | None:
    """RSS of a worker and its children (tools it started); None once it is gone (a crashed worker
    stays `running` on the board until the dispatcher's next tick notices)."""
    try:
        root = psutil.Process(pid)
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return None
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:
            continue
    return total


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
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.hermes_kanban", description=__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--serve-stats", type=int, metavar="PORT", help="serve board stats JSON")
    action.add_argument("--cleanup", metavar="RUN_ID", help="archive every task tagged with this run id")
    parser.add_argument("--hermes-command", default="hermes", help="the Hermes CLI (default: hermes)")
    parser.add_argument("--kanban-board", default=None, help="board slug (default: Hermes's current)")
    parser.add_argument("--run-id", default=None, help="also this run's tasks and workers")
    parser.add_argument(
        "--refresh", type=positive_duration, default=1.0, help="time between stats reads (default 1s)"
    )
    args = parser.parse_args(argv)
    cli = KanbanCli.of(args.hermes_command, args.kanban_board)
    try:
        if args.cleanup is not None:
            archived = cleanup(args.cleanup, cli)
            print(f"archived {len(archived)} task(s) tagged {run_tag(args.cleanup)}: {' '.join(archived)}")
            return 0
        serve_stats(args.serve_stats, cli, args.run_id, args.refresh)
    except KanbanError as exc:
        print(f"hermes-kanban: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
