"""Tool calls on the wire, as OpenAI sends them: chat-completion deltas and Responses API events, streamed
in argument fragments, and the non-streamed message/output shapes.

Pure rendering: each streamed *tick* is one generated token (a call's header naming it, or one argument
fragment), so llm.py times ticks like text tokens. Must not decide which calls to make (scripted.py does).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from simgateway.scripted import PlannedCall

_ids = itertools.count(1)


@dataclass(frozen=True)
class WireCall:
    """A planned call with the ids it carries on the wire (unique in the gateway's life)."""

    index: int
    call_id: str  # chat `id`, Responses `call_id`
    item_id: str  # Responses output item id
    name: str
    arguments: str


def wire_calls(planned: tuple[PlannedCall, ...]) -> list[WireCall]:
    calls = []
    for index, p in enumerate(planned):
        n = next(_ids)
        calls.append(WireCall(index, f"call_sim{n}", f"fc_sim{n}", p.name, p.arguments))
    return calls


def fragments(arguments: str, size: int) -> list[str]:
    """The arguments text in pieces of `size` characters (OpenAI streams about a token's worth each)."""
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


def tick_count(calls: list[WireCall], size: int) -> int:
    """Ticks (generated tokens) of a tool-call answer: a header per call plus its argument fragments."""
    return sum(1 + -(-len(c.arguments) // size) for c in calls)


def chat_ticks(calls: list[WireCall], size: int) -> list[dict]:
    """One chat `delta` per tick: each call's header (index, id, type, name, empty arguments), then its
    argument fragments carrying only index and arguments; calls one after the other, as OpenAI does."""
    ticks: list[dict] = []
    for c in calls:
        head = {"index": c.index, "id": c.call_id, "type": "function"}
        ticks.append({"tool_calls": [{**head, "function": {"name": c.name, "arguments": ""}}]})
        for piece in fragments(c.arguments, size):
            ticks.append({"tool_calls": [{"index": c.index, "function": {"arguments": piece}}]})
    return ticks


def chat_message(calls: list[WireCall]) -> dict:
    """The assistant message of a non-streamed completion that calls tools."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ],
    }


def response_item(c: WireCall, done: bool) -> dict:
    """A Responses API `function_call` output item (arguments empty while in progress)."""
    return {
        "type": "function_call",
        "id": c.item_id,
        "call_id": c.call_id,
        "name": c.name,
        "arguments": c.arguments if done else "",
        "status": "completed" if done else "in_progress",
    }


def responses_ticks(calls: list[WireCall], size: int) -> list[list[tuple[str, dict]]]:
    """Events per tick: `response.output_item.added` for a call's header, one
    `response.function_call_arguments.delta` per fragment; a call's last tick also carries its
    `...arguments.done` and `response.output_item.done`."""
    ticks: list[list[tuple[str, dict]]] = []
    for c in calls:
        where = {"item_id": c.item_id, "output_index": c.index}
        ticks.append(
            [("response.output_item.added", {"output_index": c.index, "item": response_item(c, False)})]
        )
        for piece in fragments(c.arguments, size):
            ticks.append([("response.function_call_arguments.delta", {**where, "delta": piece})])
        ticks[-1] += [
            ("response.function_call_arguments.done", {**where, "arguments": c.arguments}),
            ("response.output_item.done", {"output_index": c.index, "item": response_item(c, True)}),
        ]
    return ticks
