"""The scripted model's decision: answer this request with tool calls (which, with what arguments) or text.

Pure and stateless: it reads the request's conversation (conversation.py), the knobs and the script, so the
same request always gets the same answer. Must not render wire shapes (llm.py and tool_stream.py do).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from simgateway.conversation import Conversation
from simgateway.knobs import Knobs
from simgateway.script import Script

# made-up strings: non-ASCII and escaped characters among them, so a client's reassembly of argument
# fragments split inside a character or an escape is tested too
WORDS = ("lorem", "naïve", "東京", 'say "hi"\n', "ipsum", "dolor", "sit", "amet")
MAX_DEPTH = 4  # nested schemas deeper than this get null: enough for real tools, bounded for hostile ones


@dataclass(frozen=True)
class PlannedCall:
    name: str
    arguments: str  # JSON text, exactly as it will be streamed


def plan_calls(knobs: Knobs, conv: Conversation) -> tuple[PlannedCall, ...]:
    """The tool calls of this step; empty means answer with text.

    Order: no tools offered or tool_choice none → text; a script rule that matches → its one call; a
    forced tool (tool_choice names it, or `required`) → calls every step; else calls for the first
    `--tool-call-steps` steps of the turn, `--tool-calls-per-step` at once (one when the request forbids
    parallel calls), naming `--tool-names` (those the request offers) or else every offered tool in turn.
    """
    if not conv.offered or conv.tool_choice == "none":
        return ()
    scripted = _scripted(knobs.script, conv)
    if scripted is not None:
        return (scripted,)
    if conv.tool_choice != "required" and conv.step > knobs.tool_call_steps:
        return ()
    names = [conv.forced] if conv.forced in conv.offered else _candidates(knobs, conv)
    if not names:
        return ()
    per_step = knobs.tool_calls_per_step if conv.parallel else 1
    first = (conv.step - 1) * per_step
    picked = [names[(first + j) % len(names)] for j in range(per_step)]
    return tuple(
        PlannedCall(name, _json(made_up(conv.offered[name], first + j))) for j, name in enumerate(picked)
    )


def _candidates(knobs: Knobs, conv: Conversation) -> list[str]:
    if knobs.tool_names:
        return [n for n in knobs.tool_names if n in conv.offered]
    return list(conv.offered)


def _scripted(script: Script | None, conv: Conversation) -> PlannedCall | None:
    """The first rule whose tool is offered, whose pattern the conversation says, and that has not yet
    called its tool `times` times in this turn."""
    if script is None:
        return None
    for rule in script.rules:
        if rule.offers not in conv.offered or rule.call not in conv.offered:
            continue
        match = rule.says.search(conv.said) if rule.says is not None else None
        if rule.says is not None and match is None:
            continue
        if conv.called.count(rule.call) >= rule.times:
            continue
        arguments = rule.arguments_for(match)
        if arguments is None:
            arguments = made_up(conv.offered[rule.call], 0)
        return PlannedCall(rule.call, _json(arguments))
    return None


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def made_up(schema: object, seed: int, depth: int = 0):
    """A value matching a JSON schema (the common subset: types, enum, const, default, anyOf/oneOf,
    properties, items, minItems, minimum): deterministic in `seed`, which varies the words."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return made_up(schema[key][0], seed, depth + 1)
    kind = schema.get("type", "object" if "properties" in schema else "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    return _of_type(kind, schema, seed, depth)


def _of_type(kind: object, schema: dict, seed: int, depth: int):
    if kind == "object":
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        return {k: made_up(v, seed + i, depth + 1) for i, (k, v) in enumerate(props.items())}
    if kind == "array":
        count = schema.get("minItems", 1)
        count = min(count, 3) if isinstance(count, int) and count > 0 else 1
        return [made_up(schema.get("items", {}), seed + i, depth + 1) for i in range(count)]
    if kind in ("integer", "number"):
        low, high = _number(schema, "minimum"), _number(schema, "maximum")
        low = 1 if low is None else low
        value = int(low) + seed if kind == "integer" else float(low) + seed + 0.5
        return value if high is None else min(value, high)
    if kind == "boolean":
        return seed % 2 == 0
    if kind == "null":
        return None
    return WORDS[seed % len(WORDS)]


def _number(schema: dict, key: str) -> float | None:
    value = schema.get(key)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None
