"""Request bodies that cost what is new: an agent loop resends its whole history every step, and encoding
it whole each time makes a task's client CPU grow with the square of its steps (issue 34). A `History`
keeps each message's JSON as it was first sent, so step k encodes only the messages it appended; the
body is the same bytes httpx's `json=` would send.
"""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> bytes:
    """JSON exactly as httpx encodes a `json=` body (compact, UTF-8, no NaN)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


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
            part = dumps(message)
            self.encoded_bytes += len(part)
            self.sent.append(message)
            self.parts.append(part)
        return b"[" + b",".join(self.parts) + b"]"


def as_history(messages: list[dict]) -> History:
    """`messages` if a History already (its encoded parts with it), else a new one of them."""
    return messages if isinstance(messages, History) else History(messages)


def encode_body(body: Any) -> bytes:
    """`body` as JSON bytes, a dict's `History` values from what each has encoded already."""
    if not isinstance(body, dict) or not any(isinstance(value, History) for value in body.values()):
        return dumps(body)
    items = (
        dumps(key) + b":" + (value.json_bytes() if isinstance(value, History) else dumps(value))
        for key, value in body.items()
    )
    return b"{" + b",".join(items) + b"}"
