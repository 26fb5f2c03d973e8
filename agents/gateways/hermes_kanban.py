"""Hermes Kanban agent: board tasks created through the `hermes kanban` CLI (agents/gateways/kanban_cli.py),
tagged
with the run id, followed to a terminal state; and the command line of its board stats sidecar
(agents/gateways/kanban_stats.py) and of the cleanup of a run's tagged tasks.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from locust import constant, tag, task

from agents.base import TERMINAL_STATUSES, KitAgent, one_line, paced, thinking
from agents.gateways.kanban_cli import (
    KanbanCli,
    KanbanError,
    archived_ids,
    check_archived,
    cleanup,
    run_tag,
    run_title,
)
from agents.gateways.kanban_stats import serve_stats
from agents.settings import AgentSettings
from contract.cli import positive_duration
from contract.records import RequestRecord, TaskRecord

log = logging.getLogger(__name__)

# Hermes statuses that end a task for the kit; triage/todo/scheduled/ready/running/review keep polling.
# `blocked` waits for a human (or the dispatcher's failure breaker tripped): for a load run the task failed.
TERMINAL = {"done": "done", "blocked": "failed", "archived": "cancelled"}


class HermesKanbanAgent(KitAgent):
    """Creates one board task at a time and waits for a worker to end it, like a user on a board."""

    weight = 1
    wait_time = thinking(constant(0.5))
    task_agent = True  # rounds run only agents that work tasks

    @classmethod
    def program_run(cls, settings: AgentSettings) -> tuple[str, str]:
        return "--hermes-command", settings.hermes_command

    def on_start(self) -> None:
        # No HTTP client: the transport is the CLI (--host names the stats sidecar, for the sampler).
        self.follow_pacing()
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
        row = self.submitted(lambda: self.submit(round_no=self.round))
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.gateways.hermes_kanban", description=__doc__)
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
