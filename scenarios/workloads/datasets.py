"""A dataset of conversations to send: JSON Lines of OpenAI `messages` lists or ShareGPT-style
conversations, checked line by line, so a bad line is named (file, line, field) before any load.

Pure parsing into immutable records; which conversation a request takes is the agent's draw.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scenarios.errors import WorkloadError
from scenarios.workloads.jsonl import json_lines

ROLES = ("system", "developer", "user", "assistant", "tool")
SHAREGPT_ROLES = {
    "system": "system",
    "human": "user",
    "user": "user",
    "gpt": "assistant",
    "assistant": "assistant",
}
ORDERS = ("random", "sequential")


@dataclass(frozen=True)
class Dataset:
    """The conversations of one file, each ready to send as a chat request's `messages`."""

    path: str
    conversations: tuple[tuple[dict, ...], ...]
    order: str = "random"  # random: a seeded draw per request; sequential: the file's order, cycled

    def describe(self) -> dict:
        return {"file": self.path, "conversations": len(self.conversations), "order": self.order}


def load_dataset(path: str, order: str = "random") -> Dataset:
    """Every line: {"messages": [...]}, a bare [...] of messages, or {"conversations": [{"from", "value"}]}
    (ShareGPT; sent up to its last human turn)."""
    if order not in ORDERS:
        raise WorkloadError(f"dataset order {order!r}: use {' or '.join(ORDERS)}")
    conversations = tuple(_conversation(value, f"{path}:{n}") for n, value in json_lines(path, "dataset"))
    return Dataset(path, conversations, order)


def _conversation(value: object, where: str) -> tuple[dict, ...]:
    if isinstance(value, list):
        return messages_of(value, where, "messages")
    if isinstance(value, dict) and "messages" in value:
        return messages_of(value["messages"], where, "messages")
    if isinstance(value, dict) and "conversations" in value:
        return _sharegpt(value["conversations"], where)
    raise WorkloadError(f"{where}: expected an object with 'messages' or 'conversations', or a list")


def messages_of(value: object, where: str, field: str = "messages") -> tuple[dict, ...]:
    """OpenAI chat messages, checked: each a role and a content (text or text parts)."""
    turns = _turns(
        value, where, field, ("role", ROLES), ("content", _is_content, "text or a list of text parts")
    )
    return tuple(dict(turn) for _, _, turn in turns)


def _sharegpt(value: object, where: str) -> tuple[dict, ...]:
    """A ShareGPT conversation as chat messages, up to its last human turn (the request to send)."""
    checked = _turns(value, where, "conversations", ("from", SHAREGPT_ROLES), ("value", _is_text, "text"))
    turns = [{"role": SHAREGPT_ROLES[speaker], "content": text} for speaker, text, _ in checked]
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=None)
    if last_user is None:
        raise WorkloadError(f"{where}: conversations: no human turn to send")
    return tuple(turns[: last_user + 1])


def _turns(value: object, where: str, field: str, role: tuple, text: tuple) -> list[tuple[str, Any, dict]]:
    """(role, text, the turn) of a non-empty list of turns, each an object with a known role under
    role[0] and a text under text[0] that text[1] accepts; the first bad one named by its index."""
    (role_key, roles), (text_key, is_text, expected) = role, text
    if not isinstance(value, list) or not value:
        raise WorkloadError(f"{where}: {field}: expected a non-empty list of turns")
    found = []
    for i, turn in enumerate(value):
        at = f"{field}[{i}]"
        if not isinstance(turn, dict):
            raise WorkloadError(f"{where}: {at}: expected an object with {role_key} and {text_key}")
        if turn.get(role_key) not in roles:
            raise WorkloadError(
                f"{where}: {at}.{role_key} {turn.get(role_key)!r}: use one of {', '.join(roles)}"
            )
        if not is_text(turn.get(text_key)):
            raise WorkloadError(f"{where}: {at}.{text_key}: expected {expected}")
        found.append((turn[role_key], turn[text_key], turn))
    return found


def _is_text(value: object) -> bool:
    return isinstance(value, str)


def _is_content(content: object) -> bool:
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(p, dict) and isinstance(p.get("text", ""), str) for p in content
    )


def text_of(messages: tuple[dict, ...]) -> str:
    """The conversation as one text (for agents that take a text, not messages): contents, blank-line
    separated."""
    parts = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(str(p.get("text", "")) for p in content or () if isinstance(p, dict))
    return "\n\n".join(parts)
