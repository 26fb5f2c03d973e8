"""Command-line knobs of the simulated gateway, parsed once into a frozen Knobs record.

Knobs are the ground truth the kit's tests check measurements against, so every one is validated here and
a bad value ends the process with one clear line (exit 2); nothing else in the simulator parses options.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from typing import NoReturn

from simgateway.knob_help import HELP
from simgateway.script import Script, ScriptError, load_script

USAGE_DIALECTS = ("openai", "deepseek", "anthropic", "responses")
AGENT_MODES = ("inprocess", "process")
HOSTILE_MODES = ("drip", "garbage", "huge-body", "huge-line", "mcp-huge-ignored")  # simgateway/hostile.py
BAD_TOOL_CALL_MODES = ("not-json", "schema", "no-id", "duplicate-id", "unknown-name")  # tool_wire.py
MCP_INITIALIZE_MODES = ("honest", "hang", "wrong-version", "invalid")  # simgateway/mcp_server.py
DEFAULT_MCP_TOOLS = "search,fetch,lookup"


@dataclass(frozen=True)
class McpTool:
    """One tool of the MCP endpoint: its name, how long a call takes, how large its result is, and what
    its annotations say it does (MCP_TOOL_KINDS: `read` a read-only, closed-world tool)."""

    name: str
    latency_ms: float
    result_bytes: int
    kind: str = "read"


# A tool's annotations by its kind (--mcp-tools NAME:MS:BYTES:KIND): what a client's safe default reads.
MCP_TOOL_KINDS: dict[str, dict[str, bool] | None] = {
    "read": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
    "destructive": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
    "open": {"readOnlyHint": True, "openWorldHint": True},
    "none": None,
}


@dataclass(frozen=True)
class Knobs:
    """Every behaviour of one gateway process. Times in the unit their name says; memory in MiB."""

    port: int = 0
    bind: str = "127.0.0.1"
    seed: int = 0
    # mock LLM
    ttft_ms: float = 300.0
    itl_ms: float = 20.0
    output_tokens: int = 20
    prompt_tokens: int | None = None  # None: estimate ceil(chars / 4) over the message contents
    cached_share: float = 0.0
    prefix_cache_block: int = 0  # tokens per prompt-cache block (0: no prefix cache; prefix_cache.py)
    model: str | None = None  # None: echo the request's model
    usage_dialect: str = "openai"
    reasoning_tokens: int = 0
    cache_write_tokens: int = 0
    report_cost: bool = False
    price_in_per_m: float = 0.0
    price_cached_per_m: float = 0.0
    price_out_per_m: float = 0.0
    # scripted model: tool calls (scripted.py)
    tool_call_steps: int = 0
    tool_calls_per_step: int = 1
    tool_names: tuple[str, ...] = ()  # empty: every tool the request offers, in turn
    tool_arg_fragment_chars: int = 4
    script: Script | None = None
    bad_tool_calls: str | None = None  # every tool call malformed this way (tool_wire.py); None: well formed
    # faults
    error_rate: float = 0.0
    garbage_rate: float = 0.0
    max_concurrent_chats: int | None = None  # None: unlimited
    hostile: str | None = None  # every answer the hostile way (simgateway/hostile.py); None: honest
    hostile_bytes: int = 128 * 1024 * 1024  # the size of a huge-body / huge-line answer
    health_status: int = 200  # what /health answers (a gateway without one: 404; a keyed one: 500)
    # agent sessions
    agent_mode: str = "inprocess"
    agent_startup_ms: float = 50.0
    agent_mib: float = 4.0
    first_agent_mib: float = 100.0
    shared_mib: float = 0.0
    retain_mib_per_closed: float = 0.0
    fail_agent_at: int | None = None
    # task board
    dispatch_interval_s: float = 1.0
    max_in_progress: int = 6
    worker_mib: float = 20.0
    worker_ramp_s: float = 0.0  # a worker reaches worker_mib over this long (as a real agent imports)
    task_llm_calls: int = 2
    task_seconds: float = 2.0
    task_fail_rate: float = 0.0
    leak_mib_per_task: float = 0.0
    detach_workers: bool = False
    task_helper_s: float = 0.0  # a helper process per task lives this long (0: none), as a gateway's CLI call
    # MCP endpoint (simgateway/mcp_server.py)
    mcp_tool_ms: float = 0.0
    mcp_result_bytes: int = 256
    mcp_tools: tuple[McpTool, ...] = field(default_factory=lambda: mcp_tools(DEFAULT_MCP_TOOLS, 0.0, 256))
    mcp_session_mib: float = 0.0
    mcp_error_rate: float = 0.0
    mcp_is_error_rate: float = 0.0
    mcp_progress: int = 0
    mcp_client_requests: int = 0
    mcp_json_response: bool = False
    mcp_initialize: str = "honest"
    mcp_idle_timeout_s: float | None = None  # the SDK ends a session idle this long (None: never)
    mcp_preload: bool = False  # load the SDK before the ready line (else on the first MCP request)


class _OneLineParser(argparse.ArgumentParser):
    """argparse prints the whole usage on error; a gateway started by scripts should say one line."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"simgateway: error: {message}\n")
        sys.exit(2)


def _checked(kind: type, low: float | None = None, high: float | None = None, strict_low: bool = False):
    """An argparse type that converts with `kind` and enforces an inclusive (or strict-low) range."""

    def convert(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a valid {kind.__name__}") from None
        if value != value:  # NaN
            raise argparse.ArgumentTypeError(f"{text!r} is not a number")
        if low is not None and (value <= low if strict_low else value < low):
            raise argparse.ArgumentTypeError(f"{text!r} must be {'>' if strict_low else '>='} {low}")
        if high is not None and value > high:
            raise argparse.ArgumentTypeError(f"{text!r} must be <= {high}")
        return value

    return convert


_NONNEG = _checked(float, 0.0)
_RATE = _checked(float, 0.0, 1.0)
_COUNT = _checked(int, 0)
_POSITIVE_INT = _checked(int, 1)
_PORT = _checked(int, 0, 65535)


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected tool names separated by commas")
    return names


def _script(path: str) -> Script:
    try:
        return load_script(path)
    except ScriptError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser(prog: str = "python -m simgateway", listens: bool = True) -> argparse.ArgumentParser:
    """The CLI; option names are `--` plus the Knobs field with dashes (and `_s` spelt out where noted).
    A server that does not listen (the stdio MCP server) needs no --port."""
    p = _OneLineParser(prog=prog, description="Simulated agent gateway + mock LLM.")
    p.add_argument("--port", type=_PORT, required=listens, default=0)
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--seed", type=int, default=0)
    llm = p.add_argument_group("mock LLM")
    llm.add_argument("--ttft-ms", type=_NONNEG, default=300.0)
    llm.add_argument("--itl-ms", type=_NONNEG, default=20.0)
    llm.add_argument("--output-tokens", type=_COUNT, default=20)
    llm.add_argument("--prompt-tokens", type=_COUNT, default=None)
    llm.add_argument("--cached-share", type=_RATE, default=0.0)
    llm.add_argument("--prefix-cache-block", type=_COUNT, default=0)
    llm.add_argument("--model", default=None)
    llm.add_argument("--usage-dialect", choices=USAGE_DIALECTS, default="openai")
    llm.add_argument("--reasoning-tokens", type=_COUNT, default=0)
    llm.add_argument("--cache-write-tokens", type=_COUNT, default=0)
    llm.add_argument("--report-cost", action="store_true")
    llm.add_argument("--price-in-per-m", type=_NONNEG, default=0.0)
    llm.add_argument("--price-cached-per-m", type=_NONNEG, default=0.0)
    llm.add_argument("--price-out-per-m", type=_NONNEG, default=0.0)
    tools = p.add_argument_group("scripted model (tool calls)")
    tools.add_argument("--tool-call-steps", type=_COUNT, default=0)
    tools.add_argument("--tool-calls-per-step", type=_POSITIVE_INT, default=1)
    tools.add_argument("--tool-names", type=_names, default=())
    tools.add_argument("--tool-arg-fragment-chars", type=_POSITIVE_INT, default=4)
    tools.add_argument("--script", type=_script, default=None)
    tools.add_argument("--bad-tool-calls", choices=BAD_TOOL_CALL_MODES, default=None)
    faults = p.add_argument_group("faults")
    faults.add_argument("--error-rate", type=_RATE, default=0.0)
    faults.add_argument("--garbage-rate", type=_RATE, default=0.0)
    faults.add_argument("--max-concurrent-chats", type=_POSITIVE_INT, default=None)
    faults.add_argument("--hostile", choices=HOSTILE_MODES, default=None)
    faults.add_argument("--hostile-bytes", type=_COUNT, default=128 * 1024 * 1024)
    faults.add_argument("--health-status", type=_checked(int, 200, 599), default=200)
    agents = p.add_argument_group("agent sessions")
    agents.add_argument("--agent-mode", choices=AGENT_MODES, default="inprocess")
    agents.add_argument("--agent-startup-ms", type=_NONNEG, default=50.0)
    agents.add_argument("--agent-mib", type=_NONNEG, default=4.0)
    agents.add_argument("--first-agent-mib", type=_NONNEG, default=100.0)
    agents.add_argument("--shared-mib", type=_NONNEG, default=0.0)
    agents.add_argument("--retain-mib-per-closed", type=_NONNEG, default=0.0)
    agents.add_argument("--fail-agent-at", type=_POSITIVE_INT, default=None)
    board = p.add_argument_group("task board")
    board.add_argument(
        "--dispatch-interval", dest="dispatch_interval_s", type=_checked(float, 0.0, None, True), default=1.0
    )
    board.add_argument("--max-in-progress", type=_POSITIVE_INT, default=6)
    board.add_argument("--worker-mib", type=_NONNEG, default=20.0)
    board.add_argument("--worker-ramp-s", type=_NONNEG, default=0.0)
    board.add_argument("--task-llm-calls", type=_COUNT, default=2)
    board.add_argument("--task-seconds", type=_NONNEG, default=2.0)
    board.add_argument("--task-fail-rate", type=_RATE, default=0.0)
    board.add_argument("--leak-mib-per-task", type=_NONNEG, default=0.0)
    board.add_argument("--detach-workers", action="store_true")
    board.add_argument("--task-helper-s", type=_NONNEG, default=0.0)
    mcp = p.add_argument_group("MCP endpoint (/mcp)")
    mcp.add_argument(
        "--mcp-tools",
        default=DEFAULT_MCP_TOOLS,
    )
    mcp.add_argument("--mcp-tool-ms", type=_NONNEG, default=0.0)
    mcp.add_argument("--mcp-result-bytes", type=_COUNT, default=256)
    mcp.add_argument("--mcp-session-mib", type=_NONNEG, default=0.0)
    mcp.add_argument("--mcp-error-rate", type=_RATE, default=0.0)
    mcp.add_argument("--mcp-is-error-rate", type=_RATE, default=0.0)
    mcp.add_argument("--mcp-progress", type=_COUNT, default=0)
    mcp.add_argument("--mcp-client-requests", type=_COUNT, default=0)
    mcp.add_argument("--mcp-json-response", action="store_true")
    mcp.add_argument("--mcp-initialize", choices=MCP_INITIALIZE_MODES, default="honest")
    mcp.add_argument(
        "--mcp-idle-timeout", dest="mcp_idle_timeout_s", type=_checked(float, 0.0, None, True), default=None
    )
    mcp.add_argument(
        "--mcp-preload",
        action="store_true",
    )
    _document(p)
    return p


def _document(parser: argparse.ArgumentParser) -> None:
    """Every knob's help (simgateway/knob_help.py) with its default as the Knobs record declares it."""
    fields = Knobs.__dataclass_fields__
    for action in parser._actions:
        if action.dest not in fields:
            continue
        spec = fields[action.dest]
        default = spec.default_factory() if callable(spec.default_factory) else spec.default
        shown = DEFAULT_MCP_TOOLS if action.dest == "mcp_tools" else default
        words = HELP.get(action.option_strings[0], action.help or "")
        action.help = words if "default:" in words else f"{words} (default: {_shown(shown)})"


def _shown(value: object) -> str:
    """A default as a user types it: off for a flag, none for an unset knob, a list joined."""
    if value is False:
        return "off"
    if value is None or value == ():
        return "none"
    return str(value)


def mcp_tools(spec: str, latency_ms: float, result_bytes: int) -> tuple[McpTool, ...]:
    """`NAME[:MS[:BYTES[:KIND]]],...` with the defaults for what a tool does not say (an empty MS or
    BYTES too); ValueError naming the bad part."""
    tools = []
    for part in (p.strip() for p in spec.split(",")):
        name, *rest = part.split(":")
        kind = rest[2] if len(rest) > 2 else "read"
        if not name or len(rest) > 3 or kind not in MCP_TOOL_KINDS:
            raise ValueError(
                f"--mcp-tools: {part!r} is not NAME[:MS[:BYTES[:KIND]]] ({', '.join(MCP_TOOL_KINDS)})"
            )
        try:
            ms = _NONNEG(rest[0]) if rest and rest[0] else latency_ms
            size = _COUNT(rest[1]) if len(rest) > 1 and rest[1] else result_bytes
        except argparse.ArgumentTypeError as exc:
            raise ValueError(f"--mcp-tools {part!r}: {exc}") from None
        tools.append(McpTool(name, ms, size, kind))
    if len({t.name for t in tools}) != len(tools):
        raise ValueError(f"--mcp-tools: a tool is named twice in {spec!r}")
    return tuple(tools)


def parse_knobs(argv: list[str] | None = None) -> Knobs:
    """Parse argv into Knobs; exits 2 with one line on a bad value."""
    parser = build_parser()
    return knobs_of(vars(parser.parse_args(argv)), parser)


def knobs_of(values: dict, parser: argparse.ArgumentParser) -> Knobs:
    """Knobs from a parser's values (a bad --mcp-tools ends the process with the parser's one line)."""
    try:
        values["mcp_tools"] = mcp_tools(
            values["mcp_tools"], values["mcp_tool_ms"], values["mcp_result_bytes"]
        )
    except ValueError as exc:
        parser.error(str(exc))
    return Knobs(**values)
