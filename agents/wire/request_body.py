"""Request bodies that cost what is new: an agent loop resends its whole history every step, and encoding
it whole each time makes a task's client CPU grow with the square of its steps. A `History`
keeps each message's JSON as it was first sent, so step k encodes only the messages it appended. What
every agent of a workload sends alike (the tool schemas, the shared prefix's message) is `Encoded` once
per process, in the workload's `SharedParts`, and its bytes written into each body as they are. A body is
joined once from its parts (a 100K-token prompt is 400 KB: each extra concatenation is a copy of it), and is
the same bytes httpx's `json=` would send.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any


def dumps(value: Any) -> bytes:
    """JSON exactly as httpx encodes a `json=` body (compact, UTF-8, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


@dataclass(frozen=True, eq=False)
class Encoded:
    """A body value sent alike by many requests, with its JSON made once: written into a body as `json`."""

    value: Any
    json: bytes


class SharedParts:
    """The body parts every agent of a workload sends alike (one per process and workload; a server's MCP
    tools: one per session), each made and encoded on first use and kept. `encoded_bytes` counts what
    was encoded: the test that N agents encode them once, not N times."""

    def __init__(self) -> None:
        self.kept: dict[Hashable, Encoded] = {}
        self.encoded_bytes = 0

    def encoded(self, key: Hashable, make: Callable[[], Any]) -> Encoded:
        """The part under `key`, made by `make` (and encoded) only the first time it is asked for."""
        found = self.kept.get(key)
        if found is None:
            value = make()
            found = self.kept[key] = Encoded(value, dumps(value))
            self.encoded_bytes += len(found.json)
        return found


Parts = tuple[bytes | memoryview, ...]  # one value's JSON, in pieces joined only into a body


class TextMessage(dict):
    """A message whose text is mostly known to need no JSON escaping (the synthetic pool's words), its
    JSON made as it is built: that text's bytes as they are (a view of the pool's), where `dumps` scans
    every character (a 100K-token prompt: ~1 ms a request), in pieces the body joins once. Read as the
    dict it is; never changed after (its `json_parts` would go stale)."""

    json_parts: Parts

    @classmethod
    def of(
        cls, role: str, head: str, plain: str, tail: str = "", plain_utf8: bytes | memoryview | None = None
    ) -> TextMessage:
        """`{"role": role, "content": head + plain + tail}`, `plain` needing no escaping (no quote,
        backslash or control character: the caller's promise, which a test holds it to). `plain_utf8`:
        `plain` already encoded (a view of the pool's bytes): no copy of it until the body's."""
        message = cls(role=role, content=head + plain + tail)
        utf8 = plain.encode("utf-8") if plain_utf8 is None else plain_utf8
        opening = b'{"role":' + dumps(role) + b',"content":' + dumps(head)[:-1]
        message.json_parts = (opening, utf8, dumps(tail)[1:] + b"}")
        return message


def message_json(message: Any) -> Parts:
    """A message's JSON: a TextMessage's as made, any other's encoded."""
    return message.json_parts if isinstance(message, TextMessage) else (dumps(message),)


class History(list):
    """A task's messages, grown by appends. Each message is encoded once, when first sent; a message
    replaced or removed since (compared by identity) is encoded anew from there on, so the bytes are
    always those of the list as it is. `encoded_bytes` counts what was encoded: the test of the
    promise that a step costs what it added."""

    def __init__(self, messages: Any = ()) -> None:
        super().__init__(messages)
        self.sent: list[Any] = []  # the messages as last encoded, held so their identity stays theirs
        self.parts: list[Parts] = []
        self.encoded_bytes = 0

    @classmethod
    def after(cls, shared: Sequence[Encoded], messages: Any) -> History:
        """A history that starts with parts already encoded (the workload's shared prefix): their bytes
        are its own, not encoded or counted again; then `messages`."""
        history = cls([*(part.value for part in shared), *messages])
        history.sent = [part.value for part in shared]
        history.parts = [(part.json,) for part in shared]
        return history

    def extended(self, more: Any) -> History:
        """A new history: these messages, then `more`; what these have encoded already is its own too
        (a forked sub-agent's start encodes only its brief)."""
        child = History([*self, *more])
        child.sent, child.parts = list(self.sent), list(self.parts)
        return child

    def json_parts(self) -> list[Parts]:
        """Each message's JSON, in order: those appended (or replaced) since the last call encoded now."""
        kept = 0
        for sent, now in zip(self.sent, self, strict=False):
            if sent is not now:
                break
            kept += 1
        del self.sent[kept:], self.parts[kept:]
        for message in self[kept:]:
            part = message_json(message)
            self.encoded_bytes += sum(len(piece) for piece in part)
            self.sent.append(message)
            self.parts.append(part)
        return self.parts


def as_history(messages: list[dict]) -> History:
    """`messages` if a History already (its encoded parts with it), else a new one of them."""
    return messages if isinstance(messages, History) else History(messages)


def encode_body(body: Any) -> bytes:
    """`body` as JSON bytes, a dict's `History` and `Encoded` values from what each has encoded already,
    and a list of messages from each message's own JSON (a TextMessage's as made): one join of all the
    parts, so a long prompt's bytes are copied once into the body."""
    if not isinstance(body, dict) or not any(_made(value) for value in body.values()):
        return dumps(body)
    parts: list[bytes | memoryview] = []
    for key, value in body.items():
        parts += (b",", dumps(key), b":")
        _add_json(value, parts)
    parts[0] = b"{"
    parts.append(b"}")
    return b"".join(parts)


def _made(value: Any) -> bool:
    """Whether some of `value`'s JSON is made already."""
    if isinstance(value, History | Encoded):
        return True
    return isinstance(value, list) and any(isinstance(item, TextMessage) for item in value)


def _add_json(value: Any, parts: list[bytes | memoryview]) -> None:
    """`value`'s JSON appended to `parts`: a list's items each as its pieces, between their commas."""
    if isinstance(value, Encoded):
        parts.append(value.json)
    elif isinstance(value, list):
        items = value.json_parts() if isinstance(value, History) else [message_json(m) for m in value]
        parts.append(b"[")
        for index, item in enumerate(items):
            if index:
                parts.append(b",")
            parts += item
        parts.append(b"]")
    else:
        parts.append(dumps(value))
