"""Request bodies that cost what is new: an agent loop resends its whole history every step, and encoding
it whole each time makes a task's client CPU grow with the square of its steps (issue 34). A `History`
keeps each message's JSON as it was first sent, so step k encodes only the messages it appended. What
every agent of a workload sends alike (the tool schemas, the shared prefix's message) is `Encoded` once
per process, in the workload's `SharedParts`, and its bytes written into each body as they are. The body
is the same bytes httpx's `json=` would send.
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


class TextMessage(dict):
    """A message whose text is mostly known to need no JSON escaping (the synthetic pool's words), its
    JSON made as it is built: a copy of that text, where `dumps` scans every character (a 100K-token
    prompt: ~1 ms a request). Read as the dict it is; never changed after (its `json` would go stale)."""

    json: bytes

    @classmethod
    def of(cls, role: str, head: str, plain: str, tail: str = "") -> TextMessage:
        """`{"role": role, "content": head + plain + tail}`, `plain` needing no escaping (no quote,
        backslash or control character: the caller's promise, which a test holds it to)."""
        message = cls(role=role, content=head + plain + tail)
        text = dumps(head)[:-1] + plain.encode("utf-8") + dumps(tail)[1:]
        message.json = b'{"role":' + dumps(role) + b',"content":' + text + b"}"
        return message


def message_json(message: Any) -> bytes:
    """A message's JSON: a TextMessage's as made, any other's encoded."""
    return message.json if isinstance(message, TextMessage) else dumps(message)


class History(list):
    """A task's messages, grown by appends. Each message is encoded once, when first sent; a message
    replaced or removed since (compared by identity) is encoded anew from there on, so the bytes are
    always those of the list as it is. `encoded_bytes` counts what was encoded: the test of the
    promise that a step costs what it added."""

    def __init__(self, messages: Any = ()) -> None:
        super().__init__(messages)
        self.sent: list[Any] = []  # the messages as last encoded, held so their identity stays theirs
        self.parts: list[bytes] = []
        self.encoded_bytes = 0

    @classmethod
    def after(cls, shared: Sequence[Encoded], messages: Any) -> History:
        """A history that starts with parts already encoded (the workload's shared prefix): their bytes
        are its own, not encoded or counted again; then `messages`."""
        history = cls([*(part.value for part in shared), *messages])
        history.sent = [part.value for part in shared]
        history.parts = [part.json for part in shared]
        return history

    def extended(self, more: Any) -> History:
        """A new history: these messages, then `more`; what these have encoded already is its own too
        (a forked sub-agent's start encodes only its brief)."""
        child = History([*self, *more])
        child.sent, child.parts = list(self.sent), list(self.parts)
        return child

    def json_bytes(self) -> bytes:
        kept = 0
        for sent, now in zip(self.sent, self, strict=False):
            if sent is not now:
                break
            kept += 1
        del self.sent[kept:], self.parts[kept:]
        for message in self[kept:]:
            part = message_json(message)
            self.encoded_bytes += len(part)
            self.sent.append(message)
            self.parts.append(part)
        return b"[" + b",".join(self.parts) + b"]"


def as_history(messages: list[dict]) -> History:
    """`messages` if a History already (its encoded parts with it), else a new one of them."""
    return messages if isinstance(messages, History) else History(messages)


def encode_body(body: Any) -> bytes:
    """`body` as JSON bytes, a dict's `History` and `Encoded` values from what each has encoded already,
    and a list of messages from each message's own JSON (a TextMessage's as made)."""
    if not isinstance(body, dict) or not any(_made(value) for value in body.values()):
        return dumps(body)
    return b"{" + b",".join(dumps(key) + b":" + _json_of(value) for key, value in body.items()) + b"}"


def _made(value: Any) -> bool:
    """Whether some of `value`'s JSON is made already."""
    if isinstance(value, History | Encoded):
        return True
    return isinstance(value, list) and any(isinstance(item, TextMessage) for item in value)


def _json_of(value: Any) -> bytes:
    if isinstance(value, History):
        return value.json_bytes()
    if isinstance(value, list):
        return b"[" + b",".join(message_json(item) for item in value) + b"]"
    return value.json if isinstance(value, Encoded) else dumps(value)
