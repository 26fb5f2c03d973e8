"""A2A agent (JSON-RPC binding): protocol 1.0 (SendMessage, SendStreamingMessage, GetTask, CancelTask with
the `A2A-Version: 1.0` header), falling back to 0.3 (message/send, message/stream, tasks/get) when the server
refuses 1.0: the refused call is recorded as the version negotiation (`a2a.negotiate`, not a failure) and
sent again as a 0.3-shaped message under the 0.3 method name.

Completion comes from the task state the server reports, never from the HTTP status. The tools the agent
ran are those its status messages report (agents/gateways/gateway_events.py): streamed, each status update's;
polled,
the finished task's history. It cancels only the tasks it created (each message carries the run id in its
metadata).
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable
from urllib.parse import urlsplit

from locust import between, tag, task

from agents.base import TERMINAL_STATUSES, KitAgent, failed_record, http_record, one_line, paced, thinking
from agents.gateways.gateway_events import A2A_STATUS_UPDATE, a2a_message_runs, gateway_tool_runs
from agents.loop.agent_loop import first_token
from agents.wire.reading import BoundedBody
from agents.wire.sse import StreamTiming
from agents.workload import Draw
from contract.records import RequestRecord, TaskRecord
from contract.schema import FIRST_TOKEN_CONTENT

VERSION_HEADER = "A2A-Version"
METHODS = {
    "1.0": {
        "send": "SendMessage",
        "stream": "SendStreamingMessage",
        "get": "GetTask",
        "cancel": "CancelTask",
    },
    "0.3": {"send": "message/send", "stream": "message/stream", "get": "tasks/get", "cancel": "tasks/cancel"},
}
CARD_PATH = "/.well-known/agent-card.json"
FALLBACK_CODES = (-32009, -32601)  # version not supported, method not found: the server speaks 0.3
NEGOTIATE = "a2a.negotiate"  # the row of a 1.0 call the server refused: the answer, not a failure
STATUS_OF_STATE = {
    "completed": "done",
    "failed": "failed",
    "rejected": "failed",
    "canceled": "cancelled",
    "cancelled": "cancelled",
    "input-required": "failed",  # interrupted: a load test sends no follow-up, so it never completes
    "auth-required": "failed",
}


class A2AAgent(KitAgent):
    """Sends one message per task and follows the task to a terminal state (`--a2a-stream` to stream)."""

    weight = 1
    task_agent = True  # rounds run only agents that work tasks
    wait_time = thinking(between(0.5, 1.5))
    draw: Draw  # the current task's message, drawn from the workload when the task starts

    def on_start(self) -> None:
        super().on_start()
        self.version = self.settings.a2a_version
        self.rpc_path = self.settings.a2a_path
        self.open_tasks: set[str] = set()
        if self.version == "auto":
            card, _ = self.json_call("a2a.card", "GET", CARD_PATH)
            self.version, self.rpc_path = card_interface(card or {}, self.rpc_path)

    def on_stop(self) -> None:
        if self.settings.cleanup:
            for task_id in sorted(self.open_tasks):
                self.rpc("a2a.cancel", "cancel", functools.partial(dict, id=task_id), task_id=task_id)
        super().on_stop()

    @tag("a2a", "tasks")
    @task
    @paced
    def send_and_wait(self) -> None:
        self.draw = self.workload.next_request(self.tagged_prompt(), self.arrival)
        row = TaskRecord(task_id="", agent_id=self.agent_id, round=self.round, submitted_ts=time.time())
        if self.settings.a2a_stream:
            self.stream_task(row)
        else:
            self.poll_after_send(row)
        if row.task_id:
            if row.status in TERMINAL_STATUSES:
                self.open_tasks.discard(row.task_id)
            row.fill_durations()
            self.record(row)

    def poll_after_send(self, row: TaskRecord) -> None:
        result = self.rpc("a2a.send", "send", lambda: self.send_params(blocking=False), asked=True)
        found = task_of(result)
        if found is None:
            return
        row.task_id = str(found.get("id"))
        self.open_tasks.add(row.task_id)
        apply_polled_task(row, found)
        if row.status not in TERMINAL_STATUSES:
            self.poll_task(row, self.poll_once)

    def poll_once(self, row: TaskRecord) -> None:
        found = task_of(self.rpc("a2a.get", "get", lambda: {"id": row.task_id}, task_id=row.task_id))
        if found is not None:
            apply_polled_task(row, found)

    def stream_task(self, row: TaskRecord) -> None:
        """SendStreamingMessage: TTFT at the first artifact, completion at the terminal status event.
        A refusal of 1.0 (a JSON error instead of an event stream, or as the first event) is reported as
        its own failed row, and the stream is opened again as 0.3's message/stream."""
        asked = self.draw.asked(sends_max_tokens=False)
        record = RequestRecord(ts=time.time(), agent_id=self.agent_id, operation="a2a.stream", **asked)
        started = time.perf_counter()
        try:
            body = self.envelope("stream", self.send_params(blocking=True))
            with self.streamed("POST", self.rpc_path, json=body, headers=self.headers()) as response:
                if response.status_code >= 400:
                    http_record(record, response)
                elif not is_event_stream(response):
                    record.status_code = response.status_code
                    rpc_reply(record, json.loads(self.body(response).read()))
                else:
                    record.status_code = response.status_code
                    self.read_events(self.body(response), record, row, StreamTiming(started, []))
        except Exception as exc:  # every failure becomes a row, never a crash
            failed_record(record, exc, started)
        record.latency_ms = (time.perf_counter() - started) * 1000.0
        record.task_id = row.task_id or None
        self.report(record)
        if not row.task_id and record.operation == NEGOTIATE:
            self.stream_task(row)

    def read_events(
        self, body: BoundedBody, record: RequestRecord, row: TaskRecord, timing: StreamTiming
    ) -> None:
        for event in body.events():
            reply = json.loads(event.data)
            if rpc_reply(record, reply):
                return
            kind, payload = stream_item(reply.get("result") or {})
            if kind == "task":
                row.task_id = row.task_id or str(payload.get("id"))
                self.open_tasks.add(row.task_id)
            if kind in ("artifact", "message") and not timing.token_times:
                first_token(record, FIRST_TOKEN_CONTENT)
                timing.mark_token(event.arrived)
            ran = gateway_tool_runs(A2A_STATUS_UPDATE, payload) if kind == "status" else ()
            if ran:
                row.tool_calls = (row.tool_calls or 0) + len(ran)
            apply_task(row, payload)
        timing.fill(record)
        record.tool_calls = row.tool_calls
        if row.status not in TERMINAL_STATUSES:
            record.ok, record.error_kind, record.error = (
                False,
                "protocol",
                "stream ended before a final state",
            )

    def rpc(
        self,
        operation: str,
        verb: str,
        params: Callable[[], dict],
        task_id: str | None = None,
        asked: bool = False,
    ) -> dict | None:
        """One JSON-RPC call; on the first refusal of 1.0 it switches this agent to 0.3 and sends the call
        again, its params rebuilt in 0.3's shape (hence a callable, not a dict). `asked`: the call carries
        the workload's message (its row records the size asked)."""
        sizes = self.draw.asked(sends_max_tokens=False) if asked else {}
        body, record = self.json_call(
            operation,
            "POST",
            self.rpc_path,
            ids={"task_id": task_id, **sizes},
            check=rpc_problem,
            json=self.envelope(verb, params()),
            headers=self.headers(),
        )
        if body is None and record.operation == NEGOTIATE:
            return self.rpc(operation, verb, params, task_id, asked)
        return None if body is None else body.get("result")

    def report(self, record: RequestRecord, response_length: int = 0) -> None:
        """A 1.0 call refused as an unsupported version or unknown method is the version negotiation's
        answer: its row is `a2a.negotiate` (ok, the server's answer kept) and this agent speaks 0.3 from
        now on; the same refusal once on 0.3 stays a failed row."""
        if self.version == "1.0" and not record.ok and rpc_code(record.error) in FALLBACK_CODES:
            record.operation, record.ok, record.error_kind = NEGOTIATE, True, None
            record.error = f"A2A 1.0 refused ({record.error}): speaking 0.3"
            self.version = "0.3"
        super().report(record, response_length)

    def envelope(self, verb: str, params: dict) -> dict:
        return {
            "jsonrpc": "2.0",
            "id": uuid.uuid4().hex,
            "method": METHODS[self.version][verb],
            "params": params,
        }

    def headers(self) -> dict[str, str]:
        return {VERSION_HEADER: "1.0"} if self.version == "1.0" else {}

    def send_params(self, blocking: bool) -> dict:
        text = self.draw.text
        meta = {"loadkit_run": self.run_id, "loadkit_agent": self.agent_id}
        if self.version == "1.0":
            message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
            return {
                "message": {**message, "metadata": meta},
                "configuration": {"returnImmediately": not blocking},
            }
        message = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user"}
        parts = [{"kind": "text", "text": text}]
        return {
            "message": {**message, "parts": parts, "metadata": meta},
            "configuration": {"blocking": blocking},
        }


def card_interface(card: dict, default_path: str) -> tuple[str, str]:
    """(version, JSON-RPC path) from an agent card: 1.0 lists supportedInterfaces, 0.3 has a top-level url."""
    for interface in card.get("supportedInterfaces") or ():
        if interface.get("protocolBinding") == "JSONRPC" and str(interface.get("protocolVersion")).startswith(
            "1"
        ):
            return "1.0", urlsplit(interface.get("url", "")).path or default_path
    if str(card.get("protocolVersion", "")).startswith("0."):
        return "0.3", urlsplit(card.get("url", "")).path or default_path
    return "1.0", default_path


def is_event_stream(response) -> bool:
    return response.headers.get("content-type", "").startswith("text/event-stream")


def rpc_reply(record: RequestRecord, reply: dict) -> bool:
    """Fail the row on a JSON-RPC error reply (True when it was one)."""
    problem = rpc_problem(reply)
    if problem is not None:
        record.ok, record.error_kind, record.error = False, problem[0], one_line(problem[1])
    return problem is not None


def rpc_problem(body: dict) -> tuple[str, str] | None:
    error = body.get("error")
    if error is None:
        return None
    return "rpc", f"{error.get('code')} {error.get('message')}" if isinstance(error, dict) else str(error)


def rpc_code(error: str | None) -> int | None:
    try:
        return int((error or "").split()[0])
    except (ValueError, IndexError):
        return None


def task_of(result: dict | None) -> dict | None:
    """The Task in a SendMessage/GetTask result (1.0 wraps it in `task`; 0.3 tags it `kind: task`)."""
    if not isinstance(result, dict):
        return None
    if isinstance(result.get("task"), dict):
        return result["task"]
    return result if "status" in result and "id" in result else None


def stream_item(result: dict) -> tuple[str, dict]:
    """(kind, payload) of one stream event in either version: task, status, artifact or message."""
    for key, kind in (("task", "task"), ("statusUpdate", "status"), ("artifactUpdate", "artifact")):
        if key in result:
            return kind, result[key]
    if "message" in result:
        return "message", result["message"]
    tags = {"task": "task", "status-update": "status", "artifact-update": "artifact", "message": "message"}
    return tags.get(str(result.get("kind")), "unknown"), result


def apply_task(row: TaskRecord, payload: dict) -> None:
    """Fold a task snapshot or status event into the row: state, started and finished times."""
    state = normal_state((payload.get("status") or {}).get("state"))
    if state is None:
        return
    if state == "working" and row.started_ts is None:
        row.started_ts = time.time()
    status = STATUS_OF_STATE.get(state)
    if status and row.status not in TERMINAL_STATUSES:
        row.status, row.finished_ts = status, time.time()
        if state in ("input-required", "auth-required"):
            row.error = f"interrupted: {state}"


def apply_polled_task(row: TaskRecord, task: dict) -> None:
    """A polled task: its state; once it ended, the tools its history and last status message report
    (the server moves each status message into the history when the next status replaces it)."""
    apply_task(row, task)
    if row.status not in TERMINAL_STATUSES or row.tool_calls is not None:
        return
    history = task.get("history")
    messages = [*(history if isinstance(history, list) else ()), (task.get("status") or {}).get("message")]
    row.tool_calls = sum(len(a2a_message_runs(m)) for m in messages) or None


def normal_state(state: object) -> str | None:
    """TASK_STATE_COMPLETED (1.0) and completed (0.3) both become `completed`."""
    if not isinstance(state, str) or not state:
        return None
    return state.lower().removeprefix("task_state_").replace("_", "-")
