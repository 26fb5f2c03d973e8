"""Task-board agent (the rounds study's Kanban): submit a task tagged with the run id, poll it to a terminal
state, record queue wait and run time; on stop, archive only the tasks it created itself.

Speaks the simulator's board protocol (POST /v1/tasks, GET /v1/tasks/{id}, DELETE to archive).
"""

from __future__ import annotations

import time
from typing import Any

from locust import constant, tag, task

from agents.base import TERMINAL_STATUSES, KitAgent, paced, thinking
from agents.workload import Draw
from contract.records import TaskRecord

TERMINAL = {"done": "done", "completed": "done", "failed": "failed", "archived": "cancelled"}


class TaskAgent(KitAgent):
    """Submits one task at a time and waits for it, like a user working a board."""

    weight = 1
    wait_time = thinking(constant(0.5))
    task_agent = True  # rounds run only agents that work tasks

    def on_start(self) -> None:
        super().on_start()
        self.created: list[str] = []

    def on_stop(self) -> None:
        if self.settings.cleanup:
            for task_id in self.created:
                self.request("task.archive", "DELETE", f"/v1/tasks/{task_id}", task_id=task_id)
        super().on_stop()

    @tag("board", "tasks")
    @task
    @paced
    def submit_and_wait(self) -> None:
        self.run_task(round_no=self.round)

    def run_task(self, round_no: int | None) -> TaskRecord | None:
        """Submit, poll to a terminal state (or the task timeout), record the task row."""
        draw = self.workload.next_request(self.settings.prompt or "Do a small task.", self.arrival)
        row = self.submitted(lambda: self.submit(draw, round_no))
        if row is None:
            return None
        self.poll_until_terminal(row)
        row.fill_durations()
        self.record(row)
        self.workload.observe(draw, row.tokens_in, row.llm_calls or 1, as_text=True)
        return row

    def submit(self, draw: Draw, round_no: int | None) -> TaskRecord | None:
        """POST the task, tagged with the run id; its id remembered for cleanup."""
        body: dict[str, Any] = {
            "title": f"loadkit {self.run_id}",
            "prompt": draw.text,
            "tags": [f"loadkit:{self.run_id}"],
        }
        sized_output = self.workload.asks_output
        if sized_output:  # the board passes it to its LLM calls; a run with no workload sends none
            body["max_tokens"] = draw.max_tokens
        submitted = time.time()
        reply, _ = self.json_call("task.submit", "POST", "/v1/tasks", ids=draw.asked(sized_output), json=body)
        if reply is None:
            return None
        row = TaskRecord(
            task_id=str(reply.get("id")),
            agent_id=self.agent_id,
            round=round_no,
            submitted_ts=reply.get("submitted_at") or submitted,
        )
        self.created.append(row.task_id)
        return row

    def poll_until_terminal(self, row: TaskRecord) -> None:
        self.poll_task(row, self.poll_once)

    def poll_once(self, row: TaskRecord) -> None:
        state = self.request("task.poll", "GET", f"/v1/tasks/{row.task_id}", task_id=row.task_id)
        if state is not None:
            apply_task_state(row, state)

    def request(self, operation: str, method: str, path: str, task_id: str | None = None, **kwargs):
        body, _ = self.json_call(operation, method, path, ids={"task_id": task_id}, **kwargs)
        return body


def apply_task_state(row: TaskRecord, state: dict) -> None:
    """Copy the gateway's view of a task (status, usage) into the row. Our clock marks when a poll first saw
    it running and ended; at the end the board's own started_at/finished_at replace those marks."""
    if state.get("status") == "running" and row.started_ts is None:
        row.started_ts = time.time()
    status = TERMINAL.get(str(state.get("status")))
    if status and row.status not in TERMINAL_STATUSES:
        row.status, row.finished_ts = status, time.time()
        row.adopt_server_times(state.get("started_at"), state.get("finished_at"))
    row.worker_pid = state.get("worker_pid") or row.worker_pid
    row.model = state.get("model") or row.model
    row.error = state.get("error") or row.error
    usage = state.get("usage") or {}
    row.llm_calls = usage.get("calls", row.llm_calls)
    row.tokens_in = usage.get("prompt_tokens", row.tokens_in)
    row.tokens_cached = usage.get("cached_tokens", row.tokens_cached)
    row.tokens_out = usage.get("completion_tokens", row.tokens_out)
    row.gateway_cost_usd = usage.get("cost", row.gateway_cost_usd)
