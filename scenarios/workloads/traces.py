"""A timed trace to replay: JSON Lines in the format AIPerf replays (Mooncake's): per request a
`timestamp` (ms from the trace's start) or a `delay` (ms after the line before), `input_length`,
`output_length`, and optionally `session_id`, `hash_ids` (shared prompt blocks), `text_input` or
`messages` (exact content). Checked line by line; other fields (AIPerf's `extra`, `tools`) are ignored.

Pure parsing into immutable records; the open model's pacer replays the offsets (scenarios/arrivals.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scenarios import ceilings
from scenarios.errors import WorkloadError
from scenarios.workloads.datasets import messages_of
from scenarios.workloads.jsonl import json_lines, whole

BLOCK_TOKENS = 512  # tokens per hash_ids block: AIPerf's default (--isl-block-size)


@dataclass(frozen=True)
class TraceEntry:
    offset_s: float  # when the request is due, from the trace's start, before any speed-up
    input_tokens: int | None  # None: the line gives its content (text_input or messages)
    output_tokens: int | None  # None: the workload's output size (or --max-tokens)
    session_id: str | None = None
    hash_ids: tuple[int, ...] = ()
    messages: tuple[dict, ...] | None = None  # text_input becomes one user message


@dataclass(frozen=True)
class Trace:
    path: str
    entries: tuple[TraceEntry, ...]
    speed: float = 1.0  # > 1 replays faster: every offset divided by it
    block_tokens: int = BLOCK_TOKENS

    def offsets_s(self) -> tuple[float, ...]:
        """When each request is due in the replay, from its start."""
        return tuple(e.offset_s / self.speed for e in self.entries)

    def describe(self) -> dict:
        offsets = self.offsets_s()
        return {
            "file": self.path,
            "requests": len(self.entries),
            "speed": self.speed,
            "span_s": round(offsets[-1], 3),
            "block_tokens": self.block_tokens,
        }


def load_trace(path: str, speed: float = 1.0, block_tokens: int = BLOCK_TOKENS) -> Trace:
    if not (math.isfinite(speed) and speed > 0):
        raise WorkloadError(f"trace speed {speed!r}: must be a finite number > 0")
    if block_tokens < 1:
        raise WorkloadError(f"trace block_tokens {block_tokens!r}: must be >= 1")
    ceilings.check_tokens(block_tokens, "trace block_tokens", "a prompt block")
    entries: list[TraceEntry] = []
    for number, value in json_lines(path, "trace"):
        previous = entries[-1].offset_s if entries else 0.0
        entries.append(_entry(value, f"{path}:{number}", previous))
        _check_entry(entries[-1], f"{path}:{number}", speed, block_tokens)
    return Trace(path, tuple(entries), speed, block_tokens)


def _check_entry(entry: TraceEntry, where: str, speed: float, block_tokens: int) -> None:
    """A line's sizes within the context ceiling and its due time within the longest run (checked as
    read: a 1e15 ms timestamp is refused at its line, before anything is laid out over its span)."""
    for field, tokens in (("input_length", entry.input_tokens), ("output_length", entry.output_tokens)):
        if tokens is not None:
            ceilings.check_tokens(tokens, f"{where}: {field}", "a prompt" if field[0] == "i" else "an output")
    ceilings.check_tokens(len(entry.hash_ids) * block_tokens, f"{where}: hash_ids × block_tokens", "a prompt")
    ceilings.check_span(entry.offset_s / speed, where)


def _entry(value: object, where: str, previous_s: float) -> TraceEntry:
    if not isinstance(value, dict):
        raise WorkloadError(f"{where}: expected a JSON object")
    return TraceEntry(
        offset_s=_offset(value, where, previous_s),
        input_tokens=_input(value, where),
        output_tokens=_optional_whole(value, where, "output_length"),
        session_id=_session(value, where),
        hash_ids=_hash_ids(value, where),
        messages=_content(value, where),
    )


def _offset(value: dict, where: str, previous_s: float) -> float:
    if "timestamp" in value:
        ms = _ms(value["timestamp"], where, "timestamp")
        if ms / 1000.0 < previous_s:
            raise WorkloadError(
                f"{where}: timestamp {ms:g}: before the line above's {previous_s * 1000:g} ms (out of time "
                "order; sort the trace by timestamp)"
            )
        return ms / 1000.0
    if "delay" in value:
        return previous_s + _ms(value["delay"], where, "delay") / 1000.0
    raise WorkloadError(f"{where}: timestamp: missing (give timestamp or delay, in ms)")


def _ms(value: object, where: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WorkloadError(f"{where}: {field} {value!r}: expected milliseconds (a number >= 0)")
    if value < 0:
        raise WorkloadError(f"{where}: {field} {value!r}: must be >= 0")
    return float(value)


def _input(value: dict, where: str) -> int | None:
    content = "messages" in value or "text_input" in value
    if "input_length" not in value:
        if not content:
            raise WorkloadError(f"{where}: input_length: missing (or give text_input or messages)")
        return None
    return whole(value["input_length"], where, "input_length")


def _optional_whole(value: dict, where: str, field: str) -> int | None:
    return whole(value[field], where, field) if field in value else None


def _session(value: dict, where: str) -> str | None:
    session = value.get("session_id")
    if session is None:
        return None
    if isinstance(session, bool) or not isinstance(session, str | int):
        raise WorkloadError(f"{where}: session_id {session!r}: expected text or a number")
    return str(session)


def _hash_ids(value: dict, where: str) -> tuple[int, ...]:
    ids = value.get("hash_ids", [])
    if not isinstance(ids, list):
        raise WorkloadError(f"{where}: hash_ids: expected a list of whole numbers")
    return tuple(whole(h, where, f"hash_ids[{i}]") for i, h in enumerate(ids))


def _content(value: dict, where: str) -> tuple[dict, ...] | None:
    if "messages" in value:
        return messages_of(value["messages"], where)
    if "text_input" in value:
        if not isinstance(value["text_input"], str):
            raise WorkloadError(f"{where}: text_input: expected text")
        return ({"role": "user", "content": value["text_input"]},)
    return None
