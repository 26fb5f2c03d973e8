"""A dataset of conversations to send: JSON Lines of OpenAI `messages` lists or ShareGPT-style
conversations, checked line by line, so a bad line is named (file, line, field) before any load.

Pure parsing into immutable records; which conversation a request takes is the agent's draw.
"""

from __future__ import annotations

from dataclasses import dataclass

from scenarios.errors import WorkloadError
from scenarios.jsonl import json_lines

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
    if not isinstance(value, list) or not value:
        raise WorkloadError(f"{where}: {field}: expected a non-empty list of messages")
    out = []
    for i, message in enumerate(value):
        at = f"{field}[{i}]"
        if not isinstance(message, dict):
            raise WorkloadError(f"{where}: {at}: expected an object with role and content")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise WorkloadError(f"{where}: {at}.role {role!r}: use one of {', '.join(ROLES)}")
        if not _is_content(content):
            raise WorkloadError(f"{where}: {at}.content: expected text or a list of text parts")
        out.append(dict(message))
    return tuple(out)


def _sharegpt(value: object, where: str) -> tuple[dict, ...]:
    if not isinstance(value, list) or not value:
        raise WorkloadError(f"{where}: conversations: expected a non-empty list of turns")
    turns = []
    for i, turn in enumerate(value):
        at = f"conversations[{i}]"
        if not isinstance(turn, dict):
            raise WorkloadError(f"{where}: {at}: expected an object with from and value")
        speaker, text = turn.get("from"), turn.get("value")
        if speaker not in SHAREGPT_ROLES:
            raise WorkloadError(f"{where}: {at}.from {speaker!r}: use one of {', '.join(SHAREGPT_ROLES)}")
        if not isinstance(text, str):
            raise WorkloadError(f"{where}: {at}.value: expected text")
        turns.append({"role": SHAREGPT_ROLES[speaker], "content": text})
    last_user = max((i for i, t in enumerate(turns) if t["role"] == "user"), default=None)
    if last_user is None:
        raise WorkloadError(f"{where}: conversations: no human turn to send")
    return tuple(turns[: last_user + 1])


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
