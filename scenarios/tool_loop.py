"""The agent loop's part of a workload: the tools every request offers (N synthetic schemas of a size, or
the workload's own JSON schemas), tool_choice, how long each tool run takes and how big its result is,
and the most steps a task may take; from the workload file's [tools] and [loop] sections.

Pure: reads the schema file it is pointed at and converts; it sends and draws nothing. A bad value is a
WorkloadError naming the file, the section's line and the key.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.textfile import read_text
from scenarios import distributions
from scenarios.distributions import Distribution
from scenarios.errors import WorkloadError
from scenarios.synthetic_text import CHARS_PER_WORD, TextPool
from scenarios.workload_file import DISTRIBUTION_KEYS, Value
from scenarios.workload_values import distribution_of, seconds_of, tokens_of, whole_of

TOOLS_KEYS = ("count", "schema_tokens", "file", "choice", "parallel", "concurrent", "latency", "result")
LOOP_KEYS = ("max_steps",)
CHOICES = ("auto", "required", "none")
DEFAULT_COUNT = 4
DEFAULT_SCHEMA_TOKENS = 150
DEFAULT_RESULT_TOKENS = 100
DEFAULT_MAX_STEPS = 10
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # OpenAI's rule for a function name
_PARAMETERS = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "what to look up"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
    },
    "required": ["query"],
}


@dataclass(frozen=True)
class ToolsSection:
    schemas: tuple[dict, ...]  # chat-completions shape: {"type": "function", "function": {...}}
    choice: str  # auto, required, none, or the name of the one tool every step must call
    parallel: bool  # parallel_tool_calls (sent only when false)
    concurrent: bool  # a step's tool runs overlap: the step waits for the slowest
    latency: Distribution  # seconds per tool run
    result_tokens: Distribution  # tokens of each run's result
    where: str


@dataclass(frozen=True)
class LoopSection:
    max_steps: int
    where: str


@dataclass(frozen=True)
class ToolLoop:
    """What the chat-shaped agents loop with: offer `tools.schemas`, run each call, append, repeat until an
    answer or `max_steps` model calls."""

    tools: ToolsSection
    max_steps: int = DEFAULT_MAX_STEPS

    @property
    def schema_chars(self) -> int:
        """Characters of the schemas as a request carries them (compact JSON): what they add to a prompt."""
        return len(json.dumps(list(self.tools.schemas), separators=(",", ":")))

    def describe(self) -> dict:
        """What run.json records."""
        tools = self.tools
        return {
            "tools": [s["function"]["name"] for s in tools.schemas],
            "schema_tokens": round(self.schema_chars / CHARS_PER_WORD),
            "tool_choice": tools.choice,
            "parallel_tool_calls": tools.parallel,
            "concurrent_runs": tools.concurrent,
            "tool_latency": tools.latency.describe("s"),
            "tool_result_tokens": tools.result_tokens.describe(),
            "max_steps": self.max_steps,
        }


def parse_tools(table: dict[str, Any], where: str, folder: Path) -> ToolsSection:
    """The [tools] section (registered in scenarios/workload.py)."""
    _known_keys(table, where, TOOLS_KEYS, "tools")
    schemas = _schemas(table, where, folder)
    names = [s["function"]["name"] for s in schemas]
    choice = table.get("choice", "auto")
    if not isinstance(choice, str) or (choice not in CHOICES and choice not in names):
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise WorkloadError(f"{where} choice {choice!r}: use {', '.join(CHOICES)} or a tool's name ({shown})")
    return ToolsSection(
        schemas=schemas,
        choice=choice,
        parallel=_flag(table, where, "parallel"),
        concurrent=_flag(table, where, "concurrent"),
        latency=_spread(table, where, "latency", seconds_of, 0.0),
        result_tokens=_spread(table, where, "result", tokens_of, DEFAULT_RESULT_TOKENS),
        where=where,
    )


def parse_loop(table: dict[str, Any], where: str, folder: Path) -> LoopSection:
    """The [loop] section (registered in scenarios/workload.py)."""
    _known_keys(table, where, LOOP_KEYS, "loop")
    steps = whole_of(_value(table, where, "max_steps"), DEFAULT_MAX_STEPS)
    if steps < 1:
        raise WorkloadError(f"{where} max_steps {steps}: a task takes at least 1 step")
    return LoopSection(steps, where)


SECTIONS = {"tools": parse_tools, "loop": parse_loop}


def tool_loop_of(sections: Mapping[str, Any]) -> ToolLoop | None:
    """The loop the parsed sections ask for; None without [tools]; [loop] alone is refused."""
    tools, loop = sections.get("tools"), sections.get("loop")
    if tools is None:
        if loop is not None:
            raise WorkloadError(f"{loop.where}: needs a [tools] section (the loop runs the tools it offers)")
        return None
    return ToolLoop(tools, loop.max_steps if loop is not None else DEFAULT_MAX_STEPS)


def synthetic_schemas(count: int, schema_tokens: int) -> tuple[dict, ...]:
    """`count` tools `tool_1`...: a query and a limit, and a description that brings each schema (compact
    JSON) to about `schema_tokens` tokens at 4 characters a token. The same in every run."""
    pool = TextPool("loadkit/tools", count * schema_tokens * round(CHARS_PER_WORD))
    tools = []
    for i in range(count):
        function: dict[str, Any] = {"name": f"tool_{i + 1}", "description": "", "parameters": _PARAMETERS}
        bare = len(json.dumps({"type": "function", "function": function}, separators=(",", ":")))
        description = pool.slice(i * schema_tokens * 7, round(schema_tokens * CHARS_PER_WORD) - bare)
        tools.append({"type": "function", "function": {**function, "description": description.strip()}})
    return tuple(tools)


def _schemas(table: dict[str, Any], where: str, folder: Path) -> tuple[dict, ...]:
    if "file" in table:
        for key in ("count", "schema_tokens"):
            if key in table:
                raise WorkloadError(f"{where} {key}: the schema file gives the tools; drop {key}")
        name = table["file"]
        if not isinstance(name, str):
            raise WorkloadError(f"{where} file: expected a file name (text)")
        return load_schemas(str(folder / name))
    count = whole_of(_value(table, where, "count"), DEFAULT_COUNT)
    size = whole_of(_value(table, where, "schema_tokens"), DEFAULT_SCHEMA_TOKENS)
    if count < 1:
        raise WorkloadError(f"{where} count {count}: offer at least 1 tool")
    return synthetic_schemas(count, size)


def load_schemas(path: str) -> tuple[dict, ...]:
    """A JSON list of tools, in chat's shape ({"type": "function", "function": {...}}) or flat ({"name",
    "description", "parameters"}, the Responses API's); each returned in chat's shape."""
    text = read_text(path, WorkloadError, "tool schema file")
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise WorkloadError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, list) or not doc:
        raise WorkloadError(f"{path}: expected a JSON list of tools")
    schemas = tuple(_schema(path, i, item) for i, item in enumerate(doc))
    names = [s["function"]["name"] for s in schemas]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise WorkloadError(f"{path}: tool name {duplicate!r} appears twice")
    return schemas


def _schema(path: str, i: int, item: object) -> dict:
    spec = item.get("function", item) if isinstance(item, dict) else None
    if not isinstance(spec, dict):
        raise WorkloadError(f"{path}: tool {i}: expected an object")
    name = spec.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise WorkloadError(f"{path}: tool {i}: name {name!r}: use 1-64 letters, digits, _ or -")
    parameters = spec.get("parameters", {"type": "object", "properties": {}})
    if not isinstance(parameters, dict):
        raise WorkloadError(f"{path}: tool {i} ({name}): parameters must be a JSON schema object")
    function = {"name": name, "description": str(spec.get("description", "")), "parameters": parameters}
    return {"type": "function", "function": function}


def _spread(table: dict[str, Any], where: str, key: str, number, default: float) -> Distribution:
    """A distribution: a table of distribution keys, or one value (fixed); `default` when absent."""
    given = table.get(key)
    if given is None:
        return distributions.fixed(default)
    if not isinstance(given, dict):
        return distributions.fixed(number(Value(given, f"{where} {key}")))
    unknown = sorted(set(given) - set(DISTRIBUTION_KEYS))
    if unknown:
        raise WorkloadError(f"{where} {key}.{unknown[0]}: unknown key; use {', '.join(DISTRIBUTION_KEYS)}")
    place = f"{where} {key}"
    fields = {(key, k): Value(v, f"{where} {key}.{k}", place) for k, v in given.items()}
    found = distribution_of(fields, key, number)
    if found is None:
        raise WorkloadError(f"{place}: empty; give a mean (or a single value)")
    return found


def _flag(table: dict[str, Any], where: str, key: str) -> bool:
    value = table.get(key, True)
    if not isinstance(value, bool):
        raise WorkloadError(f"{where} {key} {value!r}: expected true or false")
    return value


def _value(table: dict[str, Any], where: str, key: str) -> Value | None:
    return Value(table[key], f"{where} {key}") if key in table else None


def _known_keys(table: dict[str, Any], where: str, keys: tuple[str, ...], section: str) -> None:
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise WorkloadError(f"{where} {unknown[0]}: unknown key; [{section}] takes {', '.join(keys)}")
