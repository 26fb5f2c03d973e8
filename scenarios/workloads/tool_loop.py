"""The agent loop's part of a workload: the tools every request offers (N synthetic schemas of a size, or
the workload's own JSON schemas), tool_choice, how long each tool run takes and how big its result is,
and the most steps a task may take; from the workload file's [tools] and [loop] sections (and its
sub-agents, [subagents]: scenarios/workloads/subagents.py).

Pure: reads the schema file it is pointed at and converts; it sends and draws nothing. A bad value is a
WorkloadError naming the file, the section's line and the key.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.textfile import read_text
from scenarios import ceilings
from scenarios.errors import WorkloadError
from scenarios.workloads import distributions
from scenarios.workloads.distributions import Distribution
from scenarios.workloads.subagents import SubagentsSection, check_at_step, parse_subagents
from scenarios.workloads.synthetic_text import CHARS_PER_WORD, TextPool
from scenarios.workloads.values import distribution_of, seconds_of, tokens_of, whole_of
from scenarios.workloads.workload_file import DISTRIBUTION_KEYS, Value

TOOLS_KEYS = (
    "count",
    "schema_tokens",
    "file",
    "choice",
    "parallel",
    "concurrent",
    "latency",
    "result",
    "mcp",
)
MCP_EXCLUDES = ("count", "schema_tokens", "file", "latency", "result")  # the MCP server gives these
LOOP_KEYS = ("max_steps", "on_bad_tool_call")
# What a step whose tool calls cannot be run does (agents/loop/tool_checks.py): end the task `error`, or send
# each bad call's error back to the model as its tool result, as real agents do, and go on.
ON_BAD_TOOL_CALL = ("fail", "reply")
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
    mcp_url: str | None = None  # the tools are an MCP server's: its tools/list, each call a tools/call
    mcp_command: str | None = None  # likewise, a server over stdio: the command each agent starts

    @property
    def from_mcp(self) -> bool:
        return bool(self.mcp_url or self.mcp_command)


@dataclass(frozen=True)
class LoopSection:
    max_steps: int
    where: str
    on_bad_tool_call: str = ON_BAD_TOOL_CALL[0]


@dataclass(frozen=True)
class ToolLoop:
    """What the chat-shaped agents loop with: offer `tools.schemas`, run each call, append, repeat until an
    answer or `max_steps` model calls."""

    tools: ToolsSection
    max_steps: int = DEFAULT_MAX_STEPS
    on_bad_tool_call: str = ON_BAD_TOOL_CALL[0]
    subagents: SubagentsSection | None = None  # a step's children, run at once in place of its tools

    @property
    def child_max_steps(self) -> int:
        """The most steps a sub-agent takes: its own max_steps, else the parent's."""
        own = self.subagents.max_steps if self.subagents is not None else None
        return own or self.max_steps

    @property
    def replies_to_bad_calls(self) -> bool:
        return self.on_bad_tool_call == "reply"

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
            "on_bad_tool_call": self.on_bad_tool_call,
            "subagents": self.subagents.describe() if self.subagents else None,
            **({"mcp": tools.mcp_url or tools.mcp_command} if tools.from_mcp else {}),
        }


def parse_tools(table: dict[str, Any], where: str, folder: Path) -> ToolsSection:
    """The [tools] section (registered in scenarios/workloads/settings.py)."""
    _known_keys(table, where, TOOLS_KEYS, "tools")
    if "mcp" in table:
        return _mcp_tools(table, where)
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
        result_tokens=_result_tokens(table, where),
        where=where,
    )


def _result_tokens(table: dict[str, Any], where: str) -> Distribution:
    """A tool result's size: its mean and max within the context ceiling (the result joins the context)."""
    found = _spread(table, where, "result", tokens_of, DEFAULT_RESULT_TOKENS)
    for value in (found.mean, found.high):
        if value is not None:
            ceilings.check_tokens(value, f"{where} result", "a tool result")
    return found


def _mcp_tools(table: dict[str, Any], where: str) -> ToolsSection:
    """[tools] mcp = URL, path or command: the schemas are the server's tools/list, a run's latency and
    result its own. An http(s) URL, or a path on --host (one word from "/"), is Streamable HTTP; anything
    else is a stdio server's command line (an argument-less absolute one reads as a path)."""
    value = table["mcp"]
    if not isinstance(value, str) or not value.strip():
        expected = "the MCP endpoint's URL or path (mcp = \"/mcp\") or a stdio server's command"
        raise WorkloadError(f"{where} mcp: expected {expected}")
    endpoint = value.strip()
    is_url = endpoint.startswith(("http://", "https://")) or (
        endpoint.startswith("/") and len(endpoint.split()) == 1
    )
    if not is_url:
        try:
            shlex.split(endpoint)
        except ValueError as exc:
            raise WorkloadError(f"{where} mcp {endpoint!r}: {exc}") from None
    given = [key for key in MCP_EXCLUDES if key in table]
    if given:
        raise WorkloadError(f"{where} {given[0]}: the MCP server gives its tools, their time and results")
    choice = table.get("choice", "auto")
    if not isinstance(choice, str):
        raise WorkloadError(f"{where} choice {choice!r}: use {', '.join(CHOICES)} or a tool's name")
    return ToolsSection(
        schemas=(),
        choice=choice,
        parallel=_flag(table, where, "parallel"),
        concurrent=_flag(table, where, "concurrent"),
        latency=distributions.fixed(0.0),
        result_tokens=distributions.fixed(0.0),
        where=where,
        mcp_url=endpoint if is_url else None,
        mcp_command=None if is_url else endpoint,
    )


def parse_loop(table: dict[str, Any], where: str, folder: Path) -> LoopSection:
    """The [loop] section (registered in scenarios/workloads/settings.py)."""
    _known_keys(table, where, LOOP_KEYS, "loop")
    steps = whole_of(_value(table, where, "max_steps"), DEFAULT_MAX_STEPS)
    if steps < 1:
        raise WorkloadError(f"{where} max_steps {steps}: a task takes at least 1 step")
    ceilings.check_steps(steps, f"{where} max_steps")
    on_bad = table.get("on_bad_tool_call", ON_BAD_TOOL_CALL[0])
    if on_bad not in ON_BAD_TOOL_CALL:
        raise WorkloadError(
            f"{where} on_bad_tool_call {on_bad!r}: use {' or '.join(map(repr, ON_BAD_TOOL_CALL))}"
        )
    return LoopSection(steps, where, on_bad)


SECTIONS = {"tools": parse_tools, "loop": parse_loop, "subagents": parse_subagents}


def tool_loop_of(sections: Mapping[str, Any]) -> ToolLoop | None:
    """The loop the parsed sections ask for; None without [tools]; [loop] or [subagents] alone is refused."""
    tools, loop, subagents = sections.get("tools"), sections.get("loop"), sections.get("subagents")
    if tools is None:
        alone = loop or subagents
        if alone is not None:
            raise WorkloadError(f"{alone.where}: needs a [tools] section (the loop runs the tools it offers)")
        return None
    found = ToolLoop(tools) if loop is None else ToolLoop(tools, loop.max_steps, loop.on_bad_tool_call)
    if subagents is None:
        return found
    check_at_step(subagents, found.max_steps)
    return ToolLoop(found.tools, found.max_steps, found.on_bad_tool_call, subagents)


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
    ceilings.check_tools(count, f"{where} count")
    ceilings.check_tokens(count * size, f"{where} count × schema_tokens", "a request's tool schemas")
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
    ceilings.check_tools(len(doc), f"{path}: tools")
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
