"""LangGraph server agent: one thread per simulated agent, one run per task (POST /threads/{id}/runs),
followed to a terminal status by polling the run or by the blocking join endpoint. Joined, the run's
final state says what its graph did: in a graph of messages, the model's answers and the tool results
after the turn's last human message are the task's steps and tool calls (polled, the run says neither).

Threads and runs carry the run id in their metadata; on stop it deletes only the thread it created.
The capacity/churn session client finds its assistant as the agent does. The server's queue
(GET /metrics?format=json) is read by the sampler, not here.
"""

from __future__ import annotations

import time
from datetime import datetime

from locust import between, tag, task

from agents.base import DEFAULT_PROMPT, TERMINAL_STATUSES, KitAgent, paced, thinking
from agents.workload import Draw
from contract.records import AgentRecord, TaskRecord
from contract.schema import AGENT_EVENT

STATUS_OF_RUN = {"success": "done", "error": "failed", "timeout": "failed", "interrupted": "cancelled"}


class LangGraphAgent(KitAgent):
    """Runs the assistant `--assistant-id` (or, without one, the first the server lists) on its own
    thread, one run at a time."""

    weight = 1
    task_agent = True  # rounds run only agents that work tasks
    wait_time = thinking(between(0.5, 1.5))

    def on_start(self) -> None:
        super().on_start()
        self.thread_id: str | None = None
        self.assistant_id = self.settings.assistant_id or discover_assistant(self)
        started = time.perf_counter()
        body, record = self.json_call("thread.create", "POST", "/threads", json={"metadata": self.tags()})
        self.thread_id = str(body["thread_id"]) if body and body.get("thread_id") else None
        self.record(
            AgentRecord(
                ts=time.time(),
                agent_id=self.agent_id,
                session_id=self.thread_id,
                event=AGENT_EVENT.created if self.thread_id else AGENT_EVENT.failed,
                ready_ms=(time.perf_counter() - started) * 1000.0 if self.thread_id else None,
                error=None if self.thread_id else (record.error or "no thread_id in reply"),
            )
        )

    def on_stop(self) -> None:
        if self.thread_id and self.settings.cleanup:
            self.json_call("thread.delete", "DELETE", f"/threads/{self.thread_id}", ids=self.ids())
            self.record_closed(self.thread_id)
        super().on_stop()

    @tag("langgraph", "tasks")
    @task
    @paced
    def run_and_wait(self) -> None:
        if not self.thread_id or not self.assistant_id:
            return
        draw = self.workload.next_request(self.settings.prompt or DEFAULT_PROMPT, self.arrival)
        body = {"assistant_id": self.assistant_id, "input": self.run_input(draw)}
        body["metadata"] = self.tags()
        submitted = time.time()
        asked = draw.asked(sends_max_tokens=False) if not self.settings.langgraph_input else {}
        run, _ = self.json_call(
            "run.create", "POST", f"/threads/{self.thread_id}/runs", ids={**self.ids(), **asked}, json=body
        )
        if run is None or not run.get("run_id"):
            return
        row = TaskRecord(
            task_id=str(run["run_id"]), agent_id=self.agent_id, round=self.round, submitted_ts=submitted
        )
        if self.settings.langgraph_join:
            self.join(row)
        self.poll_task(row, self.poll_once)
        row.fill_durations()
        self.record(row)

    def join(self, row: TaskRecord) -> None:
        """Block on /join until the run ends (the status is then read by one poll); the state it answers
        with gives the run's steps and tool calls."""
        path = f"/threads/{self.thread_id}/runs/{row.task_id}/join"
        values, _ = self.json_call("run.join", "GET", path, ids=self.ids(row.task_id))
        row.steps, row.tool_calls = turn_counts(values)

    def poll_once(self, row: TaskRecord) -> None:
        path = f"/threads/{self.thread_id}/runs/{row.task_id}"
        run, _ = self.json_call("run.poll", "GET", path, ids=self.ids(row.task_id))
        if run is not None:
            apply_run(row, run)

    def run_input(self, draw: Draw) -> dict:
        """`--langgraph-input` JSON, or a MessagesState-style input carrying the workload's messages."""
        if self.settings.langgraph_input:
            return dict(self.settings.langgraph_input)
        return {"messages": list(draw.messages)}

    def tags(self) -> dict[str, str]:
        return {"loadkit_run": self.run_id, "loadkit_agent": self.agent_id}

    def ids(self, task_id: str | None = None) -> dict:
        return {"session_id": self.thread_id, "task_id": task_id}


def discover_assistant(agent: KitAgent) -> str | None:
    """The first assistant POST /assistants/search lists (graphs deployed on the server, oldest first);
    None when it lists none (the row says why)."""
    body = {"limit": 1, "sort_by": "created_at", "sort_order": "asc"}
    listed, _ = agent.json_call("assistant.search", "POST", "/assistants/search", expect=list, json=body)
    return str(listed[0]["assistant_id"]) if listed and listed[0].get("assistant_id") else None


def apply_run(row: TaskRecord, run: dict) -> None:
    """Fold one run snapshot into the row. The client's clock marks when a poll first saw the run running
    and ended; once ended, the server's own created_at and updated_at (the server keeps no start time of
    its own, so its run time includes its queue wait) replace them, the polled figure kept beside."""
    status = str(run.get("status"))
    if status == "running" and row.started_ts is None:
        row.started_ts = time.time()
    if status in STATUS_OF_RUN and row.status not in TERMINAL_STATUSES:
        row.status, row.finished_ts = STATUS_OF_RUN[status], time.time()
        row.adopt_server_times(iso_ts(run.get("created_at")), iso_ts(run.get("updated_at")))
        if row.status != "done":
            row.error = f"run {status}"


def turn_counts(values: object) -> tuple[int | None, int | None]:
    """(model answers, tool results) after the last human message of a state's `messages`, as LangGraph
    serialises them (`type` ai, tool, human); unknown for a state without messages (another graph)."""
    messages = values.get("messages") if isinstance(values, dict) else None
    if not isinstance(messages, list):
        return None, None
    kinds = [m.get("type") if isinstance(m, dict) else None for m in messages]
    turn = kinds[len(kinds) - kinds[::-1].index("human") :] if "human" in kinds else kinds
    return turn.count("ai"), turn.count("tool")


def iso_ts(value: object) -> float | None:
    try:
        return datetime.fromisoformat(str(value)).timestamp() if value else None
    except ValueError:
        return None
