"""Hermes Agent runs API agent: POST /v1/runs, then follow the run by its SSE event stream
(GET /v1/runs/{id}/events) or by polling GET /v1/runs/{id}; one task row per run.

TTFT is our clock at the first `message.delta` event, counted from POST /v1/runs. Run times are the
server's own where it keeps them: polled, the run's created_at and updated_at (set at the terminal
status); followed by events, the terminal event's timestamp. Usage is read in both modes (the run.completed
event, or the `usage` of the polled run). On stop it stops only the runs it started.
"""

from __future__ import annotations

import json
import time

from locust import between, tag, task

from agents.base import TERMINAL_STATUSES, KitAgent, failed_record, http_record, one_line, paced, thinking
from agents.gateways.gateway_events import gateway_tool_runs
from agents.loop.session_policy import session_key
from agents.wire.reading import BoundedBody
from agents.wire.sse import StreamTiming
from agents.wire.usage import parse_usage
from contract.records import RequestRecord, TaskRecord
from contract.schema import REQUEST

STATUS_OF_RUN = {"completed": "done", "failed": "failed", "cancelled": "cancelled", "stopped": "cancelled"}
STATUS_OF_EVENT = {"run.completed": "done", "run.failed": "failed", "run.cancelled": "cancelled"}
DELTA_EVENT = "message.delta"


class HermesRunsAgent(KitAgent):
    """Starts one run at a time on its own session (`--runs-follow events|poll`)."""

    weight = 1
    task_agent = True  # rounds run only agents that work tasks
    wait_time = thinking(between(0.5, 1.5))

    def on_start(self) -> None:
        super().on_start()
        self.open_runs: set[str] = set()

    def on_stop(self) -> None:
        if self.settings.cleanup:
            for run_id in sorted(self.open_runs):
                self.json_call("run.stop", "POST", f"/v1/runs/{run_id}/stop", ids={"task_id": run_id})
        super().on_stop()

    turns = 0  # runs started so far: the session policy renews the session by it

    @property
    def session_key(self) -> str:
        """This run's session (one per agent unless `--session-policy` renews it), carrying the run id."""
        return session_key(self.run_id, self.agent_id, self.turns, self.settings.session_policy)

    @tag("hermes-runs", "tasks")
    @task
    @paced
    def run_and_follow(self) -> None:
        draw = self.workload.next_request(self.tagged_prompt(), self.arrival)
        session, self.turns = self.session_of(draw, self.session_key), self.turns + 1
        submitted, sent = time.time(), time.perf_counter()
        body, _ = self.json_call(
            "run.create",
            "POST",
            "/v1/runs",
            ids={"session_id": session, **draw.asked(sends_max_tokens=False)},
            json={"input": draw.text, "session_id": session},
        )
        if not body or not body.get("run_id"):
            return
        row = TaskRecord(
            task_id=str(body["run_id"]), agent_id=self.agent_id, round=self.round, submitted_ts=submitted
        )
        self.open_runs.add(row.task_id)
        if self.settings.runs_follow == "events":
            self.follow_events(row, sent, session)
        if row.status not in TERMINAL_STATUSES:
            self.poll_task(row, self.poll_once)
        if row.status in TERMINAL_STATUSES:
            self.open_runs.discard(row.task_id)
        row.fill_durations()
        self.record(row)
        self.workload.observe(draw, row.tokens_in, row.llm_calls or 1, as_text=True)

    def poll_once(self, row: TaskRecord) -> None:
        run, _ = self.json_call("run.poll", "GET", f"/v1/runs/{row.task_id}", ids={"task_id": row.task_id})
        run = run or {}
        if run.get("status") == "running" and row.started_ts is None:
            row.started_ts = time.time()
        status = STATUS_OF_RUN.get(str(run.get("status")))
        if status:
            row.status, row.finished_ts = status, time.time()
            row.error = run.get("error") or row.error
            fold_usage(row, run)
            row.adopt_server_times(epoch(run.get("created_at")), epoch(run.get("updated_at")))

    def follow_events(self, row: TaskRecord, sent: float, session: str) -> None:
        """Subscribe to the run's events; TTFT counts from the run's submission, not the subscription."""
        record = RequestRecord(
            ts=time.time(), agent_id=self.agent_id, operation="run.events", task_id=row.task_id
        )
        record.session_id = session
        started = time.perf_counter()
        try:
            with self.streamed("GET", f"/v1/runs/{row.task_id}/events") as response:
                if response.status_code >= 400:
                    http_record(record, response)
                else:
                    record.status_code = response.status_code
                    read_events(self.body(response), record, row, StreamTiming(sent, []))
        except Exception as exc:  # every failure becomes a row, never a crash
            failed_record(record, exc, started)
        record.latency_ms = (time.perf_counter() - started) * 1000.0
        self.report(record)


def read_events(body: BoundedBody, record: RequestRecord, row: TaskRecord, timing: StreamTiming) -> None:
    """Mark each text delta; the run.* lifecycle event ends the row; usage from whichever event has it."""
    for event in body.events():
        data = json.loads(event.data)
        kind = event.event or data.get("event") or data.get("type")
        if kind == DELTA_EVENT:
            timing.mark_token(event.arrived)
            row.started_ts = row.started_ts or time.time()
        ran = gateway_tool_runs(kind, data)  # the run's own tool calls, as Hermes reports them
        if ran:
            row.tool_calls = (row.tool_calls or 0) + len(ran)
        fold_usage(row, data)
        if kind in STATUS_OF_EVENT:
            row.status, row.finished_ts = STATUS_OF_EVENT[kind], time.time()
            row.error = one_line(data.get("error")) if data.get("error") else None
            row.adopt_server_times(None, epoch(data.get("timestamp")))
            break
    body.finish()
    timing.fill(record)
    record.itl_ms_mean, record.itl_ms_max = timing.itl_ms_mean, timing.itl_ms_max
    for name in (REQUEST.tokens_in, REQUEST.tokens_cached, REQUEST.tokens_out, "model"):
        setattr(record, name, getattr(row, name))
    record.tool_calls = row.tool_calls


def fold_usage(row: TaskRecord, data: dict) -> None:
    """Usage and model from an event or a polled run, where it carries them."""
    usage = parse_usage(data)
    for name in (REQUEST.tokens_in, REQUEST.tokens_cached, REQUEST.tokens_out, "model"):
        value = getattr(usage, name)
        setattr(row, name, value if value is not None else getattr(row, name))


def epoch(value: object) -> float | None:
    """The server's epoch-seconds timestamp, or None when it sent none."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
