"""A session file (what `python -m kit.capture` records: docs/record-replay.md) read for replay: a header
line naming the format, then one line per model call, checked line by line so a bad one is named (file,
line, field) before any load.

Pure parsing into immutable records; which session an agent replays, and when, is the agent's job.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.schema import SESSION, SESSION_FORMAT
from scenarios.errors import WorkloadError

MAX_LINE_BYTES = 64 * 1024 * 1024  # one call: a 1 M-token history is ~4 MiB; past this no agent sent it
MAX_FILE_BYTES = 1024 * 1024 * 1024  # every session is held in memory for replay
ROLES = ("system", "developer", "user", "assistant", "tool")
REPLAYED_APIS = ("chat",)  # Responses sessions are recorded, and refused for replay until it speaks them


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

    @property
    def messages(self) -> list[dict]:
        return self.body["messages"]


@dataclass(frozen=True)
class RecordedSession:
    name: str
    steps: tuple[RecordedStep, ...]


@dataclass(frozen=True)
class RecordedSessions:
    path: str
    upstream: str
    sessions: tuple[RecordedSession, ...]

    def describe(self) -> dict:
        return {
            "file": self.path,
            "upstream": self.upstream,
            "sessions": len(self.sessions),
            "calls": sum(len(s.steps) for s in self.sessions),
        }


def load_sessions(path: str) -> RecordedSessions:
    """Every session of the file, its calls in step order; WorkloadError on the first line that is not
    one (not JSON, a field missing or of the wrong type, an unknown role, a step out of order)."""
    lines = _lines(path)
    number, header = next(lines, (0, None))
    if not isinstance(header, dict) or header.get("format") != SESSION_FORMAT:
        raise WorkloadError(
            f"{path}:{number or 1}: not a session file (its first line names {SESSION_FORMAT!r})"
        )
    steps: dict[str, list[RecordedStep]] = {}
    offsets: dict[str, float] = {}
    for number, value in lines:
        where = f"{path}:{number}"
        name, offset, number_in_session, step = _call(value, where)
        done = steps.setdefault(name, [])
        if number_in_session != len(done):
            raise WorkloadError(f"{where}: session {name!r} step {number_in_session}: expected {len(done)}")
        if offset < offsets.get(name, 0.0):
            raise WorkloadError(f"{where}: offset_s {offset}: before the session's previous call")
        offsets[name] = offset
        if done:
            share_prefix(done[-1].messages, step.messages)
        done.append(step)
    if not steps:
        raise WorkloadError(f"{path}: the session file records no call")
    sessions = tuple(RecordedSession(name, tuple(s)) for name, s in steps.items())
    return RecordedSessions(path, str(header.get("upstream", "")), sessions)


def share_prefix(before: list[dict], messages: list[dict]) -> None:
    """Each message of `messages` equal to the one at its place in the session's previous call becomes
    that same object: an agent loop resends its history every step, so a session is held once, not once
    a step, and a replay's History (agents/request_body.py) encodes only what each step appended."""
    for i, (old, new) in enumerate(zip(before, messages, strict=False)):
        if old is not new and old != new:
            return
        messages[i] = old


def _lines(path: str) -> Iterator[tuple[int, object]]:
    """(line number, JSON value) of each non-blank line, read a line at a time within the caps."""
    file = Path(path)
    try:
        size = file.stat().st_size
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


def _call(value: object, where: str) -> tuple[str, float, int, RecordedStep]:
    """(session, offset, step within the session, the step) of one line, every field checked."""
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
    body = value.get("request")
    if not isinstance(body, dict):
        raise WorkloadError(f"{where}: request: expected the request body")
    _check_messages(body.get("messages"), where)
    think = value.get("think_ms")
    if think is not None and (not isinstance(think, int | float) or not _number(think) or think < 0):
        raise WorkloadError(f"{where}: think_ms {think!r}: expected milliseconds >= 0")
    answer = value.get("response")
    answer = answer if isinstance(answer, dict) else {}
    usage = answer.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    latency = answer.get(SESSION.latency_ms)
    recorded = RecordedStep(
        line=int(where.rsplit(":", 1)[1]),
        think_s=None if think is None else think / 1000.0,
        body=body,
        prompt_tokens=_whole_or_none(usage.get("prompt_tokens")),
        completion_tokens=_whole_or_none(usage.get("completion_tokens")),
        latency_ms=float(latency) if isinstance(latency, int | float) and _number(latency) else None,
    )
    return name, float(offset), step, recorded


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
