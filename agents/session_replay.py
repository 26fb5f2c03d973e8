"""Recorded sessions replayed as agents (`--sessions FILE`, docs/record-replay.md): "what happens when 50 of
*these* run at once?" Each task is one session of the file: its model calls sent in order, each after the
think time recorded before it (`--sessions-speed` faster), with the messages and tools as recorded. Every
copy tags its first user message (`[copy ...]`) unless `--identical-copies`, so a prompt cache hits only
what the real traffic would share; each copy is a session of its own at the gateway.

One tasks.csv row per replayed session; its requests' rows carry the task id, the step and, as the size
asked, the prompt tokens the recording's upstream reported, so the report's sizes section is the replay's
fidelity. The agent makes each call through its chat agent's own request and stream reader.
"""

from __future__ import annotations

import time
from typing import Any

from gevent import GreenletExit
from locust import constant, tag, task

from agents.agent_loop import END_ANSWER, END_ERROR, LoopStep, Tally
from agents.base import paced
from agents.openai_chat import ChatAgent
from agents.workload import Draw
from contract.records import RequestRecord, TaskRecord
from contract.schema import TASK_STATUS
from scenarios.session_file import RecordedSession, RecordedStep

# what a recorded request offers the model besides its messages, sent as recorded
OFFER_KEYS = (
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "response_format",
    "temperature",
    "top_p",
    "stop",
)


def copy_tagged(messages: list[dict], tag_text: str) -> list[dict]:
    """The messages with `tag_text` leading the first user message (text or text parts)."""
    out = list(messages)
    for i, message in enumerate(out):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = [{"type": "text", "text": tag_text}, *content]
        else:
            content = f"{tag_text} {content or ''}"
        out[i] = {**message, "content": content}
        break
    return out


class ReplayAgent(ChatAgent):
    """Replays the sessions of `--sessions FILE`, one after another, from its own place in the file."""

    weight = 1
    wait_time = constant(0)  # a session's own recorded think times pace it
    needs_sessions = True  # kit.startup: named without --sessions, the run is refused
    copies = 0  # sessions this agent has replayed
    replaying: RecordedStep | None = None
    due_ts: float | None = None  # when the step being replayed was due (None: a session's first)

    @tag("replay")
    @task
    @paced
    def replay_session(self) -> None:
        recorded = self.settings.sessions
        assert recorded is not None, "kit.startup refuses ReplayAgent without --sessions"
        sessions = recorded.sessions
        session = sessions[(self.agent_number - 1 + self.copies) % len(sessions)]
        self.copies += 1
        self.replay(session)

    @property
    def session_key(self) -> str:
        """Each copy is a session of its own at the gateway, carrying the run id."""
        return f"{self.run_id}-{self.agent_id}-r{self.copies}"

    def replay(self, session: RecordedSession) -> TaskRecord:
        task_id = f"{self.run_id}-{self.agent_id}-r{self.copies}"
        task = TaskRecord(task_id=task_id, agent_id=self.agent_id, round=self.round)
        task.recorded_session, task.recorded_steps = session.name, len(session.steps)
        task.submitted_ts = task.started_ts = time.time()
        tally = Tally(task)
        tag_text = None if self.settings.identical_copies else f"[copy {task_id}]"
        try:
            task.end_reason = self._steps(session, task_id, tag_text, tally)
        except GreenletExit:
            task.status, task.error = TASK_STATUS.unfinished, "the run stopped before the session ended"
            tally.close()
            self.record(task)
            raise
        task.status = TASK_STATUS.done if task.end_reason == END_ANSWER else TASK_STATUS.failed
        tally.close()
        self.record(task)
        return task

    def _steps(self, session: RecordedSession, task_id: str, tag_text: str | None, tally: Tally) -> str:
        self.due_ts = None
        for number, step in enumerate(session.steps, 1):
            if self.due_ts is not None:
                self.due_ts += (step.think_s or 0.0) / self.settings.sessions_speed
                time.sleep(max(0.0, self.due_ts - time.time()))
            messages = step.messages if tag_text is None else copy_tagged(step.messages, tag_text)
            self.replaying = step
            record, calls = self.model_call(
                self.draw_of(step, messages), messages, LoopStep(number, task_id, None, step.prompt_tokens)
            )
            self.due_ts = record.ts + (record.latency_ms or 0.0) / 1000.0  # the answer's end
            tally.add(record, len(calls))
            if not record.ok:
                tally.task.error = record.error
                return END_ERROR
        return END_ANSWER

    def report(self, record: RequestRecord, response_length: int = 0) -> None:
        """A replayed call's row also carries what the recording says of it, and how late it was sent."""
        if self.replaying is not None:
            late = None if self.due_ts is None else (record.ts - self.due_ts) * 1000.0
            record.replay_late_ms = late
            record.recorded_latency_ms = self.replaying.latency_ms
            record.recorded_tokens_out = self.replaying.completion_tokens
        super().report(record, response_length)

    def draw_of(self, step: RecordedStep, messages: list[dict]) -> Draw:
        """The call as a draw: its messages and the output it may take (the recorded max_tokens, else as
        many tokens as the recording's answer had)."""
        body = step.body
        asked = body.get("max_completion_tokens", body.get("max_tokens")) or step.completion_tokens
        return Draw(tuple(messages), int(asked or self.settings.max_tokens), step.prompt_tokens, None)

    def request_body(
        self,
        stream: bool,
        draw: Draw,
        session: str,
        history: list[dict] | None = None,
        step: LoopStep | None = None,
    ) -> dict[str, Any]:
        """The chat agent's body (model, stream, max_tokens, session), with the recorded call's own offer."""
        body = super().request_body(stream, draw, session, history, step)
        if self.replaying is not None:
            body.update({k: self.replaying.body[k] for k in OFFER_KEYS if k in self.replaying.body})
        return body


# Locust's class-making always adds a base class's tasks: the chat agent's own (chat_stream) is not this
# agent's, so its task list is set once the class is made
ReplayAgent.tasks = [ReplayAgent.replay_session]
