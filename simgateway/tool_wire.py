"""Tool calls on the wire, as OpenAI sends them: chat-completion deltas and Responses API events, streamed
in argument fragments, and the non-streamed message/output shapes.

Pure rendering: each streamed *tick* is one generated token (a call's header naming it, or one argument
fragment), so llm.py times ticks like text tokens. Must not decide which calls to make (scripted.py does).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
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


DUPLICATE_ID = "call_sim_dup"
UNKNOWN_TOOL = "no_such_tool"


def wire_calls(planned: tuple[PlannedCall, ...], bad: str | None = None) -> list[WireCall]:
    """The planned calls with their ids; `bad` (--bad-tool-calls) makes every one malformed that way."""
    calls = []
    for index, p in enumerate(planned):
        n = next(_ids)
        call = WireCall(index, f"call_sim{n}", f"fc_sim{n}", p.name, p.arguments)
        calls.append(malformed(call, bad) if bad else call)
    return calls


def malformed(call: WireCall, bad: str) -> WireCall:
    """A call as a broken model writes it: arguments cut short (`not-json`), every argument of the wrong
    type (`schema`), no id, the id of the gateway's other calls (`duplicate-id`), a tool never offered."""
    if bad == "not-json":
        return dataclasses.replace(call, arguments=call.arguments[:-1] or "{")
    if bad == "schema":
        return dataclasses.replace(call, arguments=_wrong_types(call.arguments))
    if bad == "no-id":
        return dataclasses.replace(call, call_id="")
    if bad == "duplicate-id":
        return dataclasses.replace(call, call_id=DUPLICATE_ID)
    return dataclasses.replace(call, name=UNKNOWN_TOOL)


def _wrong_types(arguments: str) -> str:
    """Each argument replaced by a value of another JSON type (a list for a text...)."""
    values = json.loads(arguments)
    if not isinstance(values, dict) or not values:
        return json.dumps("not an object")
    return json.dumps({k: "text" if isinstance(v, list) else [v] for k, v in values.items()})


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
