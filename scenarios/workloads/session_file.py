"""A session file (what `python -m kit.capture` records: docs/record-replay.md) read for replay: a header
line naming the format, then one line per model call or MCP tool call, checked line by line so a bad one
is named (file, line, field) before any load. A session's tool calls are kept beside its model steps, each
knowing how many model steps came before it, so a replay sends them in their recorded order.

Pure parsing into immutable records; which session an agent replays, and when, is the agent's job.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.schema import SESSION, SESSION_FORMAT, SESSION_MCP_API
from scenarios.errors import WorkloadError

MAX_LINE_BYTES = 64 * 1024 * 1024  # one call: a 1 M-token history is ~4 MiB; past this no agent sent it
MAX_FILE_BYTES = 1024 * 1024 * 1024  # every session is held in memory for replay
ROLES = ("system", "developer", "user", "assistant", "tool")
REPLAYED_APIS = ("chat", SESSION_MCP_API)  # Responses sessions are recorded, refused for replay for now
STREAM_RECORDED, STREAM_ALWAYS = "recorded", "always"  # --sessions-stream: each call as recorded, or streamed
# a recorded session's status: broken (an answer broke off), else error (an HTTP or JSON-RPC error), else ok
STATUS_OK, STATUS_ERROR, STATUS_BROKEN = "ok", "error", "broken"
SKIPPABLE = (STATUS_BROKEN, STATUS_ERROR)


@dataclass(frozen=True)
class RecordedStep:
    """One recorded model call: the request as sent (messages, tools, max_tokens...), the think time
    before it, and what the upstream reported (to hold the replay against)."""

    line: int
    think_s: float | None  # since the session's previous answer ended; None for its first call
    body: dict[str, Any]  # the request body as recorded (secrets already removed by the recorder)
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_ms: float | None
    gap_s: float | None  # since its previous model answer ended (tool calls between included); None: none

    @property
    def messages(self) -> list[dict]:
        return self.body["messages"]


@dataclass(frozen=True)
class RecordedToolCall:
    """One recorded MCP tools/call: the tool, its arguments, the think time before it, and how many of
    the session's model steps were recorded before it (its place between them)."""

    line: int
    think_s: float | None
    after_steps: int
    name: str
    arguments: dict[str, Any]
    answered: bool  # the recording's call was answered (a result, isError or not), not an error
    latency_ms: float | None


@dataclass(frozen=True)
class RecordedSession:
    name: str
    steps: tuple[RecordedStep, ...]
    tool_calls: tuple[RecordedToolCall, ...] = ()
    status: str = STATUS_OK  # the worst of its calls' (--sessions-skip leaves some statuses out)

    def tool_calls_after(self, steps: int) -> tuple[RecordedToolCall, ...]:
        """The tool calls recorded after the session's first `steps` model steps, before the next."""
        return self._by_place.get(steps, ())

    @functools.cached_property
    def _by_place(self) -> dict[int, tuple[RecordedToolCall, ...]]:
        """The tool calls grouped by their place, once: a replay asks at every step of every copy."""
        places: dict[int, list[RecordedToolCall]] = {}
        for call in self.tool_calls:
            places.setdefault(call.after_steps, []).append(call)
        return {place: tuple(calls) for place, calls in places.items()}


@dataclass(frozen=True)
class RecordedSessions:
    path: str
    upstream: str
    sessions: tuple[RecordedSession, ...]

    left_out: tuple[str, ...] = ()  # the file's sessions --sessions-select/--sessions-skip left out

    def describe(self) -> dict:
        return {
            "file": self.path,
            "upstream": self.upstream,
            "sessions": len(self.sessions),
            "calls": sum(len(s.steps) for s in self.sessions),
            "tool_calls": sum(len(s.tool_calls) for s in self.sessions),
            "left_out": len(self.left_out),
        }


def select_sessions(
    recorded: RecordedSessions, names: tuple[str, ...], skip: tuple[str, ...]
) -> RecordedSessions:
    """The sessions named (all when none is), less those of a status in `skip`; WorkloadError naming a
    session the file does not have, a status that is not one, or a choice that leaves none."""
    bad = [s for s in skip if s not in SKIPPABLE]
    if bad:
        raise WorkloadError(f"--sessions-skip {bad[0]!r}: use {' or '.join(SKIPPABLE)}")
    known = {s.name: s for s in recorded.sessions}
    unknown = [n for n in names if n not in known]
    if unknown:
        some = ", ".join(list(known)[:5]) + (", ..." if len(known) > 5 else "")
        raise WorkloadError(f"--sessions-select {unknown[0]!r}: no such session in {recorded.path} ({some})")
    chosen = [known[n] for n in dict.fromkeys(names)] if names else list(recorded.sessions)
    kept = tuple(s for s in chosen if s.status not in skip)
    if not kept:
        raise WorkloadError(f"{recorded.path}: --sessions-select/--sessions-skip leave no session to replay")
    left = tuple(s.name for s in recorded.sessions if s not in kept)
    return dataclasses.replace(recorded, sessions=kept, left_out=left)


def load_sessions(path: str) -> RecordedSessions:
    """Every session of the file, its calls in step order; WorkloadError on the first line that is not
    one (not JSON, a field missing or of the wrong type, an unknown role, a step out of order)."""
    lines = _lines(path)
    number, header = next(lines, (0, None))
    if not isinstance(header, dict) or header.get("format") != SESSION_FORMAT:
        raise WorkloadError(
            f"{path}:{number or 1}: not a session file (its first line names {SESSION_FORMAT!r})"
        )
    sessions: dict[str, _Reading] = {}
    for number, value in lines:
        where = f"{path}:{number}"
        name, offset, number_in_session = _placed(value, where)
        reading = sessions.setdefault(name, _Reading())
        if number_in_session != reading.lines:
            raise WorkloadError(
                f"{where}: session {name!r} step {number_in_session}: expected {reading.lines}"
            )
        reading.lines += 1
        assert isinstance(value, dict)  # _placed checked it
        reading.status = worse(reading.status, _status(_answer(value)))
        if value.get("api") == SESSION_MCP_API:  # concurrent tool calls end out of their send order
            reading.add_tool_call(_tool_call(value, where, len(reading.steps)))
            continue
        if offset < reading.offset:
            raise WorkloadError(f"{where}: offset_s {offset}: before the session's previous call")
        reading.offset = offset
        reading.add_step(_call(value, where))
    if not sessions:
        raise WorkloadError(f"{path}: the session file records no call")
    found = tuple(
        RecordedSession(name, tuple(r.steps), tuple(r.tool_calls), r.status) for name, r in sessions.items()
    )
    return RecordedSessions(path, str(header.get("upstream", "")), found)


@dataclass
class _Reading:
    """One session as its lines are read: its lines so far, its model steps and tool calls, the offset of
    its last model call, and the time since its last model answer ended (tool calls and thinks since)."""

    lines: int = 0
    offset: float = 0.0
    steps: list[RecordedStep] = field(default_factory=list)
    tool_calls: list[RecordedToolCall] = field(default_factory=list)
    since_answer_s: float = 0.0
    status: str = STATUS_OK

    def add_tool_call(self, call: RecordedToolCall) -> None:
        self.tool_calls.append(call)
        self.since_answer_s += (call.think_s or 0.0) + (call.latency_ms or 0.0) / 1000.0

    def add_step(self, step: RecordedStep) -> None:
        gap = self.since_answer_s + (step.think_s or 0.0) if self.steps else None
        if self.steps:
            share_prefix(self.steps[-1].messages, step.messages)
        self.steps.append(dataclasses.replace(step, gap_s=gap))
        self.since_answer_s = 0.0


def share_prefix(before: list[dict], messages: list[dict]) -> None:
    """Each message of `messages` equal to the one at its place in the session's previous call becomes
    that same object: an agent loop resends its history every step, so a session is held once, not once
    a step, and a replay's History (agents/wire/request_body.py) encodes only what each step appended."""
    for i, (old, new) in enumerate(zip(before, messages, strict=False)):
        if old is not new and old != new:
            return
        messages[i] = old


def _lines(path: str) -> Iterator[tuple[int, object]]:
    """(line number, JSON value) of each non-blank line, read a line at a time within the caps."""
    file = Path(path)
    try:
        mode = file.stat()
        if not stat.S_ISREG(mode.st_mode):  # a FIFO would hang the run's start, a device never end
            raise WorkloadError(
                f"{path}: not a regular file (a FIFO, a device or a directory): give the file"
            )
        size = mode.st_size
        if size > MAX_FILE_BYTES:
            raise WorkloadError(
                f"{path}: {size:,} bytes, over the {MAX_FILE_BYTES // 2**20:,} MiB a replay holds"
            )
        handle = file.open("rb")
    except OSError as exc:
        raise WorkloadError(f"{path}: cannot read the session file ({exc.strerror or exc})") from None
    with handle:
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), 1):
            if len(raw) > MAX_LINE_BYTES:
                raise WorkloadError(f"{path}:{number}: a line over {MAX_LINE_BYTES // 2**20} MiB")
            if raw.strip():
                yield number, _decoded(raw, f"{path}:{number}")


def _decoded(raw: bytes, where: str) -> object:
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise WorkloadError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise WorkloadError(f"{where}: not JSON ({message}); truncated?") from None


def _placed(value: object, where: str) -> tuple[str, float, int]:
    """(session, offset, step within the session) of one line, its api checked."""
    if not isinstance(value, dict):
        raise WorkloadError(f"{where}: expected a JSON object")
    name, offset, api, step = value.get("session"), value.get("offset_s"), value.get("api"), value.get("step")
    if not isinstance(name, str) or not name:
        raise WorkloadError(f"{where}: session: expected a name")
    if not isinstance(offset, int | float) or not _number(offset) or offset < 0:
        raise WorkloadError(f"{where}: offset_s {offset!r}: expected seconds >= 0")
    if api not in REPLAYED_APIS:
        raise WorkloadError(f"{where}: api {api!r}: replay speaks {', '.join(REPLAYED_APIS)} for now")
    if isinstance(step, bool) or not isinstance(step, int):
        raise WorkloadError(f"{where}: step {step!r}: expected a whole number")
    return name, float(offset), step


def _call(value: dict, where: str) -> RecordedStep:
    """One model call's line, every field checked."""
    body = value.get("request")
    if not isinstance(body, dict):
        raise WorkloadError(f"{where}: request: expected the request body")
    _check_messages(body.get("messages"), where)
    answer = _answer(value)
    usage = answer.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    think = _think_s(value, where)
    return RecordedStep(
        line=int(where.rsplit(":", 1)[1]),
        think_s=think,
        body=body,
        prompt_tokens=_whole_or_none(usage.get("prompt_tokens")),
        completion_tokens=_whole_or_none(usage.get("completion_tokens")),
        latency_ms=_latency_ms(answer),
        gap_s=think,  # with the tool calls before it, once its session is known (_Reading.add_step)
    )


def _tool_call(value: dict, where: str, after_steps: int) -> RecordedToolCall:
    """One MCP tools/call's line (capture/mcp_exchange.py), every field checked."""
    body = value.get("request")
    params = body.get("params") if isinstance(body, dict) else None
    if not isinstance(body, dict) or body.get("method") != "tools/call" or not isinstance(params, dict):
        raise WorkloadError(f"{where}: request: expected a tools/call's method and params")
    if not isinstance(params.get("name"), str) or not params["name"]:
        raise WorkloadError(f"{where}: request.params.name: expected the tool's name")
    if not isinstance(params.get("arguments"), dict):
        raise WorkloadError(f"{where}: request.params.arguments: expected an object")
    answer = _answer(value)
    status = answer.get("status")
    answered = isinstance(status, int) and status < 400 and "rpc_error" not in answer and "isError" in answer
    return RecordedToolCall(
        line=int(where.rsplit(":", 1)[1]),
        think_s=_think_s(value, where),
        after_steps=after_steps,
        name=params["name"],
        arguments=params["arguments"],
        answered=answered,
        latency_ms=_latency_ms(answer),
    )


def _think_s(value: dict, where: str) -> float | None:
    think = value.get("think_ms")
    if think is not None and (not isinstance(think, int | float) or not _number(think) or think < 0):
        raise WorkloadError(f"{where}: think_ms {think!r}: expected milliseconds >= 0")
    return None if think is None else think / 1000.0


def _status(answer: dict) -> str:
    """One call's status: broken (its answer broke off), error (HTTP >= 400 or a JSON-RPC error), ok."""
    if answer.get("broken"):
        return STATUS_BROKEN
    status = answer.get("status")
    failed = isinstance(status, int) and status >= 400
    return STATUS_ERROR if failed or "rpc_error" in answer else STATUS_OK


def worse(a: str, b: str) -> str:
    order = (STATUS_OK, STATUS_ERROR, STATUS_BROKEN)
    return max(a, b, key=order.index)


def _answer(value: dict) -> dict:
    answer = value.get("response")
    return answer if isinstance(answer, dict) else {}


def _latency_ms(answer: dict) -> float | None:
    latency = answer.get(SESSION.latency_ms)
    return float(latency) if isinstance(latency, int | float) and _number(latency) else None


def _check_messages(messages: object, where: str) -> None:
    if not isinstance(messages, list) or not messages:
        raise WorkloadError(f"{where}: request.messages: expected a non-empty list")
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise WorkloadError(f"{where}: messages[{i}]: expected an object")
        if message.get("role") not in ROLES:
            raise WorkloadError(
                f"{where}: messages[{i}].role {message.get('role')!r}: use one of {', '.join(ROLES)}"
            )
        if not isinstance(message.get("content"), str | list | type(None)):
            raise WorkloadError(f"{where}: messages[{i}].content: expected text, parts or null")


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and _number(value) else None
