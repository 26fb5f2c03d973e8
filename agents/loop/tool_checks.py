"""Tool calls checked as an agent checks them before running any: an id present and new in the task, a name
the request offered, arguments that parse as a JSON object and match the tool's JSON schema (required
fields, types, enums, nested objects and arrays). A call that fails is what a real agent cannot run.

Pure: calls and the offered schemas in, one verdict per call out; the loop (agents/loop/agent_loop.py) decides
what a failure does to the task (`[loop] on_bad_tool_call`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agents.loop.tool_deltas import ToolCall
from contract.schema import BAD_TOOL_CALL

MAX_DEPTH = 16  # nested schemas checked this deep (a hostile schema's depth costs nothing more)
_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


@dataclass(frozen=True)
class BadCall:
    """Why one call cannot be run: its error_kind (contract/schema.py BAD_TOOL_CALL) and one line."""

    kind: str
    message: str


def check_calls(calls: list[ToolCall], schemas: tuple[dict, ...], seen_ids: set[str]) -> list[BadCall | None]:
    """A verdict per call (None: it can be run); `seen_ids` (the task's earlier ids) takes this step's."""
    offered = {s["function"]["name"]: s["function"].get("parameters") or {} for s in schemas}
    verdicts = []
    for call in calls:
        verdicts.append(_check(call, offered, seen_ids))
        if call.call_id:
            seen_ids.add(call.call_id)
    return verdicts


def _check(call: ToolCall, offered: dict[str, dict], seen_ids: set[str]) -> BadCall | None:
    if not call.call_id:
        return BadCall(BAD_TOOL_CALL.tool_call_no_id, f"tool call {call.name!r} has no id")
    if call.call_id in seen_ids:
        return BadCall(BAD_TOOL_CALL.tool_call_duplicate_id, f"tool call id {call.call_id!r} used twice")
    if call.name not in offered:
        return BadCall(BAD_TOOL_CALL.tool_unknown, f"tool {call.name!r} was not offered")
    arguments = call.parsed()  # an empty text is no arguments: `{}`, as OpenAI's SDKs read it
    if arguments is None:
        shown = call.arguments[:40] + ("..." if len(call.arguments) > 40 else "")
        return BadCall(
            BAD_TOOL_CALL.tool_args_not_json, f"{call.name} arguments are not a JSON object: {shown!r}"
        )
    problem = schema_problem(arguments, offered[call.name], "arguments")
    if problem:
        return BadCall(BAD_TOOL_CALL.tool_args_schema, f"{call.name} {problem}")
    return None


def schema_problem(value: object, schema: object, path: str, depth: int = 0) -> str | None:
    """What in `value` breaks `schema` (types, enum, required, properties, items); None when nothing."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return None
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds if isinstance(kinds, list) else []
    known = [k for k in kinds if k in _TYPES]
    if known and not any(_is(value, k) for k in known):
        return f"{path}: expected {' or '.join(known)}, got {_json_type(value)}"
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return f"{path}: {value!r} is not one of {enum}"
    if isinstance(value, dict):
        return _object_problem(value, schema, path, depth)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problem = schema_problem(item, schema["items"], f"{path}[{i}]", depth + 1)
            if problem:
                return problem
    return None


def _object_problem(value: dict, schema: dict, path: str, depth: int) -> str | None:
    required = schema.get("required")
    for name in required if isinstance(required, list) else ():
        if name not in value:
            return f"{path}: required field {name!r} is missing"
    properties = schema.get("properties")
    for name, sub in (properties if isinstance(properties, dict) else {}).items():
        if name in value:
            problem = schema_problem(value[name], sub, f"{path}.{name}", depth + 1)
            if problem:
                return problem
    return None


def _is(value: object, kind: str) -> bool:
    if isinstance(value, bool) and kind != "boolean":
        return False  # JSON's true is no number
    if kind == "integer":
        return isinstance(value, int) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    return isinstance(value, _TYPES[kind])


def _json_type(value: object) -> str:
    kinds = ("null", "boolean", "integer", "number", "string", "array", "object")
    return next((k for k in kinds if _is(value, k)), type(value).__name__)
