"""Which tool an MCP agent calls next and with what arguments: a weighted mix over the tools the server
lists (`--mcp-tool-mix search=3,fetch=1`; default every tool alike), arguments from a file of examples
(`--mcp-arguments FILE`, JSON: tool name -> list of argument objects) or made from the tool's input
schema (its required properties, each a value of its type).

Pure: draws from the agent's own seeded stream; it sends nothing.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.errors import InputError


@dataclass(frozen=True)
class ToolMix:
    """Tools, their weights and their example arguments, as chosen by the user."""

    weights: dict[str, float]  # empty: every listed tool alike
    examples: dict[str, list[dict]]  # tool name -> argument objects to cycle through


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


def tool_mix(mix: str | None, arguments: str | None) -> ToolMix:
    return ToolMix(parse_mix(mix), load_examples(arguments))


class ToolPicker:
    """One agent's draws: the next tool (by the mix's weights) and its arguments."""

    def __init__(self, mix: ToolMix, tools: list[dict], rng: random.Random, tag: str) -> None:
        schemas = {t["name"]: t.get("inputSchema") or {} for t in tools if isinstance(t.get("name"), str)}
        unknown = sorted(set(mix.weights) - set(schemas))
        if unknown:
            raise ValueError(f"--mcp-tool-mix names tools the server does not list: {', '.join(unknown)}")
        self.names = [n for n in schemas if mix.weights.get(n, 0.0 if mix.weights else 1.0) > 0]
        if not self.names:
            raise ValueError("the server lists no tool to call")
        self.weights = [mix.weights.get(n, 1.0) for n in self.names]
        self.schemas = schemas
        self.mix = mix
        self.rng = rng
        self.tag = tag
        self.drawn = 0

    def next(self) -> tuple[str, dict]:
        name = self.rng.choices(self.names, self.weights)[0]
        self.drawn += 1
        examples = self.mix.examples.get(name)
        if examples:
            return name, examples[self.drawn % len(examples)]
        return name, arguments_for(self.schemas[name], f"{self.tag} call {self.drawn}")


def arguments_for(schema: dict, text: str) -> dict:
    """An argument object for an input schema: each required property a value of its type (strings
    carry `text`, so a server's log names the agent; numbers the schema's minimum, else 1)."""
    props = schema.get("properties") or {}
    return {name: value_for(props.get(name) or {}, text) for name in schema.get("required") or ()}


def value_for(prop: dict, text: str) -> Any:
    if prop.get("enum"):
        return prop["enum"][0]
    if "const" in prop:
        return prop["const"]
    kind = prop.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    if kind in ("integer", "number"):
        value = prop.get("minimum", 1)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "array":
        return []
    if kind == "object":
        return arguments_for(prop, text)
    if kind == "null":
        return None
    return text
