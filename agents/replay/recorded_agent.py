"""Recorded sessions replayed as agents (`--sessions FILE`, docs/record-replay.md): "what happens when 50 of
*these* run at once?" Each task is one session of the file: its model calls sent in order, each after the
think time recorded before it (`--sessions-speed` faster), with the messages and tools as recorded. Every
copy tags its first user message (`[copy ...]`) unless `--identical-copies`, so a prompt cache hits only
what the real traffic would share; each copy is a session of its own at the gateway.

Each call is streamed or not as recorded, with its recorded `stream_options` (`--sessions-stream always`
streams every call with usage). Once the run is stopping (its -t, a first SIGTERM/SIGINT, the profile's
end) no new session, call or tool call starts: a copy waiting out a think time ends at once, a call in
flight has the stop-timeout, and the copy ends `unfinished`.

One tasks.csv row per replayed session; its requests' rows carry the task id, the step and, as the size
asked, the prompt tokens the recording's upstream reported, so the report's sizes section is the replay's
fidelity. The agent makes each call through its chat agent's own request and stream reader.

With `--live-tools` the gateway's tool calls are answered live by the workload's [tools] (its MCP server,
else the loop's drawn tools: the agent loop's own runner), and each next step sends the copy's history so
far, grown by the gateway's calls and the live results, plus what the recording adds besides
(agents/replay/live_tools.py). Where the gateway answers in text but the recording called on, the replay goes
on
with the recording's next user turn; calls the recording did not have are answered and sent again at once,
up to the loop's max_steps in a row (then the copy ends `max_steps`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from gevent import GreenletExit
from locust import constant, tag, task
from locust.exception import StopUser
from locust.user.task import LOCUST_STATE_RUNNING, LOCUST_STATE_STOPPING, LOCUST_STATE_WAITING

from agents.base import paced
from agents.gateways.model_call import CallParts
from agents.gateways.openai_chat import ChatAgent
from agents.loop.agent_loop import CHAT, END_ANSWER, END_ERROR, END_MAX_STEPS, LoopStep, Tally, loop_runner_of
from agents.loop.tool_deltas import ToolCall
from agents.replay.live_tools import continues_calls, kept, recorded_delta
from agents.replay.tools import CopyTools
from agents.run_context import context_of
from agents.wire.request_body import History
from agents.workload import Draw
from contract.records import RequestRecord, TaskRecord
from contract.schema import TASK_STATUS
from scenarios.workloads.session_file import STREAM_ALWAYS, RecordedSession, RecordedStep, RecordedToolCall

STOP_LOOK_S = 0.2  # a think time's slices: how soon a waiting copy sees the run's stop request
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


def copy_tagged(messages: list[dict], tag_text: str, made: dict[int, dict] | None = None) -> list[dict]:
    """The messages with `tag_text` leading the first user message (text or text parts). `made` holds the
    copy's tagged messages by their recorded one's identity: a step that resends that message sends the
    same tagged object, so the copy's History (agents/wire/request_body.py) encodes it once."""
    out = list(messages)
    for i, message in enumerate(out):
        if message.get("role") != "user":
            continue
        if made is not None and (tagged := made.get(id(message))) is not None:
            out[i] = tagged
            break
        content = message.get("content")
        if isinstance(content, list):
            content = [{"type": "text", "text": tag_text}, *content]
        else:
            content = f"{tag_text} {content or ''}"
        out[i] = {**message, "content": content}
        if made is not None:
            made[id(message)] = out[i]
        break
    return out


@dataclass
class LiveCopy:
    """One copy replayed with live tools: the history it sends; whether the gateway's last answer asked
    tool calls (answered, their results in the history); its calls numbered; what answers the calls."""

    task_id: str
    tally: Tally
    max_steps: int  # the loop's: the most calls in a row the recording did not have
    run: Callable[[list[ToolCall], int], list[str]]  # (calls, step) -> their results, live
    history: History = field(default_factory=History)
    called: bool = False
    numbers: Iterator[int] = field(default_factory=lambda: itertools.count(1))


class ReplayAgent(ChatAgent):
    """Replays the sessions of `--sessions FILE`, one after another, from its own place in the file."""

    weight = 1
    wait_time = constant(0)  # a session's own recorded think times pace it
    needs_sessions = True  # kit.startup: named without --sessions, the run is refused
    copies = 0  # sessions this agent has replayed
    replaying: RecordedStep | RecordedToolCall | None = None  # the recorded call being sent (None: one it
    # did not have)
    tools_replayed = True  # the copy sends the recorded tool calls (not with --live-tools)
    offering: RecordedStep | None = None  # whose tools and max_tokens the call offers
    due_ts: float | None = None  # when the step being replayed was due (None: a session's first)

    @tag("replay")
    @task
    @paced
    def replay_session(self) -> None:
        recorded = self.settings.sessions
        assert recorded is not None, "kit.startup refuses ReplayAgent without --sessions"
        sessions = recorded.sessions
        session = sessions[(self.agent_number - 1 + self.copies) % len(sessions)]
        self.stop_if_stopping()
        self.copies += 1
        self.replay(session)

    @property
    def session_key(self) -> str:
        """Each copy is a session of its own at the gateway, carrying the run id."""
        return f"{self.run_id}-{self.agent_id}-r{self.copies}"

    def replay(self, session: RecordedSession) -> TaskRecord:
        task_id = self.session_key  # a copy: one task, one session at the gateway
        task = TaskRecord(task_id=task_id, agent_id=self.agent_id, round=self.round)
        task.recorded_session, task.recorded_steps = session.name, len(session.steps)
        task.submitted_ts = task.started_ts = time.time()
        tally = Tally(task)
        tag_text = None if self.settings.identical_copies else f"[copy {task_id}]"
        try:
            task.end_reason = self._steps(session, task_id, tag_text, tally)
        except (GreenletExit, StopUser):
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
        self.tools_replayed = not (self.settings.live_tools and session.steps)
        if not self.tools_replayed:
            return self._live_steps(session, task_id, tag_text, tally)
        tools = CopyTools(self, task_id)
        try:
            end = self._recorded_steps(session, task_id, tag_text, tally, tools)
        except (GreenletExit, StopUser):
            tools.close(cleanup=False)  # the run is stopping: no request more
            raise
        tools.close(self.settings.cleanup)
        return end

    def _recorded_steps(
        self, session: RecordedSession, task_id: str, tag_text: str | None, tally: Tally, tools: CopyTools
    ) -> str:
        """The recording as it is: its model steps, and its tool calls in their places between them."""
        # one History a copy: its steps resend the recording's messages (the same objects: session_file's
        # share_prefix), so each step encodes only what it appended
        history, tagged = History(), dict[int, dict]()
        for number, step in enumerate(session.steps, 1):
            end = self._tool_calls(session.tool_calls_after(number - 1), tools, number - 1, tally)
            if end is not None:
                return end
            history[:] = step.messages if tag_text is None else copy_tagged(step.messages, tag_text, tagged)
            record, _ = self._send(
                step, step, history, LoopStep(number, task_id, None, step.prompt_tokens), tally
            )
            if not record.ok:
                return END_ERROR
        last = len(session.steps)
        return self._tool_calls(session.tool_calls_after(last), tools, last, tally) or END_ANSWER

    def _tool_calls(
        self, calls: tuple[RecordedToolCall, ...], tools: CopyTools, step: int, tally: Tally
    ) -> str | None:
        """Recorded tool calls sent in order, each once due (as a model step is); END_ERROR at the first
        the copy cannot go on from (the task's error says why), else None. Their rows carry the model
        step that asked them (none before the first)."""
        for call in calls:
            self._wait_due(call.think_s)
            self.stop_if_stopping()
            self.replaying, self.offering = call, None
            why = tools.call(call, step or None)
            self.due_ts = time.time()  # the answer's end
            if why is not None:
                tally.task.error = why
                return END_ERROR
        return None

    def _wait_due(self, think_s: float | None) -> None:
        """Sleep until the next recorded call is due: the previous answer's end plus the think time
        recorded before it, over --sessions-speed (a session's first call is due at once). The agent
        waits as Locust's own wait does: a stop asked meanwhile ends it at once (GreenletExit)."""
        if self.due_ts is None:
            return
        self.due_ts += (think_s or 0.0) / self.settings.sessions_speed
        self._state = LOCUST_STATE_WAITING
        try:
            while (left := self.due_ts - time.time()) > 0:
                self.stop_if_stopping()  # the run's own stop request is seen within a slice
                time.sleep(min(left, STOP_LOOK_S))
        finally:
            if self._state == LOCUST_STATE_WAITING:
                self._state = LOCUST_STATE_RUNNING

    def stop_if_stopping(self) -> None:
        """The run is stopping (its -t, a first SIGTERM/SIGINT, the profile's end: Locust's stopping
        state, or the run's stop request, which comes before it): no new session, call or tool call
        starts; what is in flight has the stop-timeout. StopUser ends the copy `unfinished`."""
        link = context_of(self.environment).link
        if self._state == LOCUST_STATE_STOPPING or (link is not None and link.stopping()):
            raise StopUser()

    def _send(
        self,
        recorded: RecordedStep | None,
        offer: RecordedStep,
        messages: list[dict],
        step: LoopStep,
        tally: Tally,
    ) -> tuple[RequestRecord, list[ToolCall]]:
        """One call with `offer`'s tools and max_tokens: a recorded step once due (the previous answer's end
        plus its think time), or one the recording did not have (`recorded` None: sent at once)."""
        if recorded is not None:
            self._wait_due(recorded.think_s if self.tools_replayed else recorded.gap_s)
        self.stop_if_stopping()
        self.replaying, self.offering = recorded, offer
        record, calls = self.model_call(self.draw_of(offer, messages), messages, step)
        self.due_ts = record.ts + (record.latency_ms or 0.0) / 1000.0  # the answer's end
        tally.add(record, len(calls))
        if not record.ok:
            tally.task.error = record.error
        return record, calls

    def _live_steps(self, session: RecordedSession, task_id: str, tag_text: str | None, tally: Tally) -> str:
        """The session with the gateway's tool calls answered live (the module's docstring says the rule)."""
        loop = self.settings.workload.tool_loop
        assert loop is not None, "kit.settings refuses --live-tools without the workload's [tools]"
        runner = loop_runner_of(self, loop)
        mcp, tools = runner.tools_of(self)
        if tools is None:
            return runner.tools_failed(tally)
        live = LiveCopy(
            task_id, tally, loop.max_steps, lambda calls, n: runner.run_calls(mcp, self, calls, tally, n)
        )
        previous: RecordedStep | None = None
        for step in session.steps:
            before, previous = previous, step
            delta = None if before is None else recorded_delta(before.messages, step.messages)
            if delta is not None and continues_calls(delta) and not live.called:
                continue  # the gateway answered where the recording called on: on to its next user turn
            if before is None or delta is None:  # the first step, or a history the recording rewrote
                live.history = History(
                    step.messages if tag_text is None else copy_tagged(step.messages, tag_text)
                )
            else:
                if live.called and not continues_calls(delta) and (end := self._unrecorded(live, before)):
                    return end
                live.history += kept(delta)
            if (end := self._live_call(live, step, step)) is not None:
                return end
        assert previous is not None  # a session file records at least one call
        return (self._unrecorded(live, previous) if live.called else None) or END_ANSWER

    def _live_call(self, live: LiveCopy, recorded: RecordedStep | None, offer: RecordedStep) -> str | None:
        """One call of the live history, the gateway's tool calls answered into it: END_ERROR, or None."""
        number = next(live.numbers)
        asked = recorded.prompt_tokens if recorded is not None else None
        step = LoopStep(number, live.task_id, None, asked)
        record, calls = self._send(recorded, offer, live.history, step, live.tally)
        if not record.ok:
            return END_ERROR
        live.called = bool(calls)
        if calls:
            self.stop_if_stopping()  # no live tool call starts once the run is stopping
            live.history += CHAT.step_items(calls, live.run(calls, number))
        return None

    def _unrecorded(self, live: LiveCopy, offer: RecordedStep) -> str | None:
        """The gateway asked calls the recording did not have (answered already): the history sent again at
        once until it answers in text; END_MAX_STEPS after the loop's max_steps such calls in a row."""
        for _ in range(live.max_steps):
            if (end := self._live_call(live, None, offer)) is not None:
                return end
            if not live.called:
                return None
        live.tally.task.error = f"no answer after {live.max_steps} steps the recording did not have"
        return END_MAX_STEPS

    def report(self, record: RequestRecord, response_length: int = 0) -> None:
        """A replayed call's row also carries what the recording says of it, and how late it was sent."""
        if self.replaying is not None:
            late = None if self.due_ts is None else (record.ts - self.due_ts) * 1000.0
            record.replay_late_ms = late
            record.recorded_latency_ms = self.replaying.latency_ms
            if isinstance(self.replaying, RecordedStep):
                record.recorded_tokens_out = self.replaying.completion_tokens
        super().report(record, response_length)

    def draw_of(self, step: RecordedStep, messages: list[dict]) -> Draw:
        """The call as a draw: its messages and the output it may take (the recorded max_tokens, else as
        many tokens as the recording's answer had)."""
        body = step.body
        asked = body.get("max_completion_tokens", body.get("max_tokens")) or step.completion_tokens
        return Draw(tuple(messages), int(asked or self.settings.max_tokens), step.prompt_tokens, None)

    @property
    def streams(self) -> bool:
        """A call is streamed as recorded (`stream` in its request), or always with
        `--sessions-stream always` (a TTFT where the recording did not stream)."""
        forced = self.settings.sessions_stream == STREAM_ALWAYS
        return forced or (self.offering is not None and self.offering.body.get("stream") is True)

    def request_body(self, call: CallParts) -> dict[str, Any]:
        """The chat agent's body (model, stream, max_tokens, session), with the recorded call's own offer
        and, streamed as recorded, its own `stream_options` (none if it had none: no usage is added)."""
        body = super().request_body(call)
        if self.offering is None:
            return body
        recorded = self.offering.body
        body.update({k: recorded[k] for k in OFFER_KEYS if k in recorded})
        if call.stream and self.settings.sessions_stream != STREAM_ALWAYS:
            body.pop("stream_options", None)
            body.update(
                {"stream_options": recorded["stream_options"]} if "stream_options" in recorded else {}
            )
        return body


# Locust's class-making always adds a base class's tasks: the chat agent's own (chat_stream) is not this
# agent's, so its task list is set once the class is made
ReplayAgent.tasks = [ReplayAgent.replay_session]
