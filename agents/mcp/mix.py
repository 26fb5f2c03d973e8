"""What an MCP agent calls next and with what: a weighted mix over the tools the server lists
(`--mcp-tool-mix search=3,fetch=1`), which may weigh `mcp.resources_read`, `mcp.prompts_get` and
`mcp.ping` beside the tools; arguments from a file of examples (`--mcp-arguments FILE`, JSON: tool name ->
list of argument objects) or made from the tool's input schema as a client would (each required property:
its default, const, first enum value or example, else a value of its type and format).

Safe by default: with no mix named, only tools annotated read-only and not open-world are called (MCP's
tool annotations say what a call may change or reach); others only when named or with
--mcp-allow-unsafe-tools. The mix is checked against the server's lists once before load (kit/startup.py)
and by each agent on its own session.

Pure: draws from the agent's own seeded stream; it sends nothing.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.errors import InputError
from contract.schema import MCP_OP

# What a mix may weigh besides tools: the row's operation names (their request needs a listed item).
MIX_OPERATIONS = (MCP_OP.resources_read, MCP_OP.prompts_get, MCP_OP.ping)
LISTED_BY = {MCP_OP.resources_read: "resources/list", MCP_OP.prompts_get: "prompts/list"}
UNSAFE_HINT = "name them in --mcp-tool-mix or pass --mcp-allow-unsafe-tools"
FORMATS = {  # a string property's value by its format (on loopback or reserved names: nothing is reached)
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "uri": "http://127.0.0.1/loadkit",
    "url": "http://127.0.0.1/loadkit",
    "email": "loadkit@example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
}


@dataclass(frozen=True)
class ToolMix:
    """Tools (and operations), their weights and their example arguments, as chosen by the user."""

    weights: dict[str, float]  # empty: every safe listed tool alike
    examples: dict[str, list[dict]]  # tool name -> argument objects to cycle through
    allow_unsafe: bool = False  # the default mix takes every listed tool

    def lists_needed(self) -> list[str]:
        """The list requests a session makes before drawing (resources/list for mcp.resources_read...)."""
        return [LISTED_BY[name] for name in LISTED_BY if self.weights.get(name)]


@dataclass(frozen=True)
class Chosen:
    """The mix as the server's lists allow it: what is drawn with which weight, and which listed tools the
    default mix left out (tool -> why)."""

    weights: dict[str, float]
    left_out: dict[str, str] = field(default_factory=dict)

    def start_line(self) -> str:
        """What the run calls, and what the default mix left out and why (said once before load)."""
        line = "MCP mix: " + ", ".join(f"{name}={weight:g}" for name, weight in self.weights.items())
        if self.left_out:
            why = ", ".join(f"{name} ({reason})" for name, reason in self.left_out.items())
            line += f"; left out: {why} ({UNSAFE_HINT})"
        return line


def unsafe_reason(tool: dict) -> str | None:
    """Why the default mix leaves a tool out (None: annotated read-only and not open-world)."""
    hints = tool.get("annotations") if isinstance(tool.get("annotations"), dict) else {}
    if not hints:
        return "unannotated"
    if hints.get("openWorldHint") is True:
        return "open-world"
    if hints.get("readOnlyHint") is not True:
        return "not read-only" if hints.get("destructiveHint") is False else "destructive"
    return None


def choose(mix: ToolMix, tools: list[dict], listed: dict[str, list[dict]] | None = None) -> Chosen:
    """The mix checked against the server's tools (and, for the operations it weighs, its resources and
    prompts: `listed`, by list method); InputError naming what does not fit."""
    names = [t["name"] for t in tools if isinstance(t.get("name"), str)]
    unknown = [n for n in [*mix.weights, *mix.examples] if n not in names and n not in MIX_OPERATIONS]
    if unknown:
        shown = ", ".join(names[:12]) or "none"
        raise InputError(
            f"MCP tool mix: the server lists no tool {', '.join(sorted(set(unknown)))} (it lists: {shown})"
        )
    check_examples(mix.examples, {t["name"]: t.get("inputSchema") or {} for t in tools if t.get("name")})
    left_out: dict[str, str] = {}
    if mix.weights:
        weights = {n: w for n, w in mix.weights.items() if w > 0}
    else:
        for tool in (t for t in tools if t.get("name") in names):
            reason = None if mix.allow_unsafe else unsafe_reason(tool)
            if reason:
                left_out[tool["name"]] = reason
        weights = {n: 1.0 for n in names if n not in left_out}
    for operation, method in LISTED_BY.items():
        if operation in weights and not (listed or {}).get(method):
            raise InputError(f"MCP tool mix weighs {operation}: the server's {method} lists nothing")
    if not weights:
        why = f"; left out: {', '.join(f'{n} ({r})' for n, r in left_out.items())}" if left_out else ""
        raise InputError(f"MCP tool mix: no tool to call (the server lists {len(names)}){why}: {UNSAFE_HINT}")
    return Chosen(weights, left_out)


def check_examples(examples: dict[str, list[dict]], schemas: dict[str, dict]) -> None:
    """Each argument object of --mcp-arguments carries its tool's required properties."""
    for name, objects in examples.items():
        required = set(schemas.get(name, {}).get("required") or ())
        for arguments in objects:
            if missing := sorted(required - set(arguments)):
                raise InputError(f"--mcp-arguments {name}: an argument object lacks {', '.join(missing)}")


def parse_mix(text: str | None) -> dict[str, float]:
    """`NAME=WEIGHT,...`; InputError naming the bad part."""
    weights: dict[str, float] = {}
    for part in (p.strip() for p in (text or "").split(",") if p.strip()):
        name, eq, weight = part.partition("=")
        try:
            value = float(weight) if eq else 1.0
        except ValueError:
            value = -1.0
        if not name or not value >= 0:
            raise InputError(f"--mcp-tool-mix {part!r}: expected NAME=WEIGHT with a weight >= 0")
        weights[name.strip()] = value
    if weights and not any(weights.values()):
        raise InputError("--mcp-tool-mix: every weight is 0")
    return weights


def load_examples(path: str | None) -> dict[str, list[dict]]:
    """The arguments file: a JSON object of tool name -> list of argument objects."""
    if not path:
        return {}
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"--mcp-arguments {path}: {exc}") from None
    good = isinstance(doc, dict) and all(
        isinstance(v, list) and v and all(isinstance(a, dict) for a in v) for v in doc.values()
    )
    if not good:
        raise InputError(f"--mcp-arguments {path}: expected {{tool: [argument objects]}}")
    return doc


def tool_mix(mix: str | None, arguments: str | None, allow_unsafe: bool = False) -> ToolMix:
    return ToolMix(parse_mix(mix), load_examples(arguments), allow_unsafe)


class ToolPicker:
    """One agent's draws: the next tool or operation (by the mix's weights) and its parameters."""

    def __init__(
        self,
        mix: ToolMix,
        tools: list[dict],
        rng: random.Random,
        tag: str,
        listed: dict[str, list[dict]] | None = None,
    ) -> None:
        chosen = choose(mix, tools, listed)
        self.names, self.weights = list(chosen.weights), list(chosen.weights.values())
        chosen_tools = [t for t in tools if t.get("name") in chosen.weights]
        self.schemas = {t["name"]: t.get("inputSchema") or {} for t in chosen_tools}
        self.listed = listed or {}
        self.mix = mix
        self.rng = rng
        self.tag = tag
        self.drawn = 0

    def next(self) -> tuple[str, dict]:
        """(tool name, its arguments), or (an operation of MIX_OPERATIONS, its request's params)."""
        name = self.rng.choices(self.names, self.weights)[0]
        self.drawn += 1
        text = f"{self.tag} call {self.drawn}"
        if name == MCP_OP.ping:
            return name, {}
        if name == MCP_OP.resources_read:
            resources = self.listed[LISTED_BY[name]]
            return name, {"uri": resources[self.drawn % len(resources)].get("uri")}
        if name == MCP_OP.prompts_get:
            prompts = self.listed[LISTED_BY[name]]
            prompt = prompts[self.drawn % len(prompts)]
            wanted = [a for a in prompt.get("arguments") or () if isinstance(a, dict) and a.get("required")]
            return name, {"name": prompt.get("name"), "arguments": {a["name"]: text for a in wanted}}
        examples = self.mix.examples.get(name)
        if examples:
            return name, examples[self.drawn % len(examples)]
        return name, arguments_for(self.schemas[name], text)


def arguments_for(schema: dict, text: str) -> dict:
    """An argument object for an input schema: each required property a value (`value_for`)."""
    props = schema.get("properties") or {}
    return {name: value_for(props.get(name) or {}, text) for name in schema.get("required") or ()}


def value_for(prop: dict, text: str) -> Any:
    """A value a client would send: the schema's default, const, first enum value or first example; else
    one of its type (the first of a union, a string by its format, carrying `text` so a server's log
    names the agent; a number within its bounds)."""
    for key in ("default", "const"):
        if key in prop:
            return prop[key]
    for key in ("enum", "examples"):
        if isinstance(prop.get(key), list) and prop[key]:
            return prop[key][0]
    branches = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(branches, list) and branches and isinstance(branches[0], dict):
        return value_for(branches[0], text)
    kind = prop.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind in ("integer", "number"):
        return number_for(prop, kind)
    if kind == "boolean":
        return True
    if kind == "array":
        items = prop["items"] if isinstance(prop.get("items"), dict) else {}
        return [value_for(items, text) for _ in range(int(prop.get("minItems") or 0))]
    if kind == "object":
        return arguments_for(prop, text)
    if kind == "null":
        return None
    return FORMATS.get(str(prop.get("format")), text)


def number_for(prop: dict, kind: str) -> int | float:
    """1, or the schema's bound when 1 is outside it."""
    low = prop.get("minimum", prop.get("exclusiveMinimum"))
    high = prop.get("maximum", prop.get("exclusiveMaximum"))
    value = 1 if low is None or low < 1 else low + (1 if "minimum" not in prop else 0)
    value = value if high is None or value <= high else high
    return int(value) if kind == "integer" else float(value)
