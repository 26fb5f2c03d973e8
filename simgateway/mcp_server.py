"""The simulator's MCP server, built on the official `mcp` SDK's low-level `Server`: tools with known
latency and result size, a resource and a prompt, and the counts the tests compare the kit's rows with.

One definition for every transport: Streamable HTTP and HTTP+SSE in the simulator's own process
(simgateway/mcp_http.py, `/mcp` and `/sse`, loaded on first use by simgateway/mcp_endpoint.py) and stdio,
a process per client (simgateway/mcp_stdio.py). The protocol is the SDK's; this module holds only the
simulated behaviour and its counts.
"""

from __future__ import annotations

import asyncio
import mmap
import random
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

from simgateway.knobs import MCP_TOOL_KINDS, Knobs

RECENT_CALLS = 1000  # tools/call times kept for the counts
RESOURCE_URI = "sim://doc/1"
PROMPT_NAME = "summarise"
WRONG_VERSION = "1999-01-01"
FILLER = "lorem ipsum dolor sit amet "
PROPERTIES = {
    "query": {"type": "string", "description": "what to look for"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100},
}
INPUT_SCHEMA = {
    "type": "object",
    "properties": PROPERTIES,
    "required": ["query"],
    "additionalProperties": False,
}


def argument_error(arguments: dict[str, Any]) -> str | None:
    """What breaks INPUT_SCHEMA in a call's arguments, or None. By hand, not jsonschema: importing it (with
    its format checkers' grammars) cost this host 5 s of the simulator's start-up for a two-field schema."""
    extra = sorted(set(arguments) - set(PROPERTIES))
    limit = arguments.get("limit", 1)
    if "query" not in arguments:
        return "'query' is a required property"
    if not isinstance(arguments["query"], str):
        return "'query' is not of type 'string'"
    if extra:
        return f"additional properties are not allowed ({', '.join(map(repr, extra))})"
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100:
        return f"'limit' {limit!r} is not an integer from 1 to 100"
    return None


def text_of(size: int) -> str:
    """A result text of exactly `size` characters (ASCII: as many bytes)."""
    return (FILLER * (size // len(FILLER) + 1))[:size]


@dataclass
class McpLedger:
    """What the server served: the truth the tests read (GET /v1/sim/mcp; a stdio server's stats file)."""

    methods: Counter = field(default_factory=Counter)  # JSON-RPC method -> requests and notifications
    tool_calls: Counter = field(default_factory=Counter)  # tool name -> tools/call answered
    tool_errors: Counter = field(default_factory=Counter)  # tool name -> JSON-RPC errors answered
    tool_is_error: Counter = field(default_factory=Counter)  # tool name -> isError results answered
    clients: Counter = field(default_factory=Counter)  # clientInfo name of each initialize
    client_refusals: int = 0  # server -> client requests the client answered with an error
    opened: int = 0
    closed: int = 0
    dropped: int = 0  # ended by the server (idle timeout), seen when the client next used it (404)
    call_ms: deque = field(default_factory=lambda: deque(maxlen=RECENT_CALLS))  # tools/call served, ms
    blocks: dict[str, mmap.mmap | None] = field(default_factory=dict)  # open session id -> its memory

    def as_json(self) -> dict:
        return {
            "sessions": {
                "open": len(self.blocks),
                "opened": self.opened,
                "closed": self.closed,
                "dropped": self.dropped,
            },
            "methods": dict(self.methods),
            "tool_calls": dict(self.tool_calls),
            "tool_errors": dict(self.tool_errors),
            "tool_is_error": dict(self.tool_is_error),
            "clients": dict(self.clients),
            "client_refusals": self.client_refusals,
            "tools_call_ms": list(self.call_ms),
        }


class SimMcp:
    """The MCP server's behaviour (the knobs) and its ledger; the SDK speaks the protocol, `server` is
    what a transport runs."""

    def __init__(self, knobs: Knobs, ledger: McpLedger | None = None) -> None:
        self.knobs = knobs
        self.rng = random.Random(f"{knobs.seed}/mcp")
        self.ledger = ledger or McpLedger()  # one ledger for every transport a process serves
        self.tools = {tool.name: tool for tool in knobs.mcp_tools}
        server: Server[Any] = Server(
            "simgateway",
            version="1",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
        )
        server.middleware.append(self.observe)
        self.server = server

    async def observe(self, ctx, call_next):
        """Count each method; the initialize knob's misbehaviour (never answer, a wrong version; the
        `invalid` mode answers before the SDK, in the transport)."""
        self.ledger.methods[ctx.method] += 1
        if ctx.method != "initialize":
            return await call_next(ctx)
        client = (ctx.params or {}).get("clientInfo") or {}
        self.ledger.clients[str(client.get("name"))] += 1
        if self.knobs.mcp_initialize == "hang":
            await asyncio.Event().wait()
        result = await call_next(ctx)
        if self.knobs.mcp_initialize == "wrong-version":
            result = _with_version(result, WRONG_VERSION)
        return result

    async def timed(self, ctx, call_next):
        """Middleware for a transport whose HTTP request is not the call (HTTP+SSE): each tools/call timed
        from its dispatch to its result, into the ledger."""
        if ctx.method != "tools/call":
            return await call_next(ctx)
        started = time.perf_counter()
        try:
            return await call_next(ctx)
        finally:
            self.ledger.call_ms.append((time.perf_counter() - started) * 1000.0)

    async def list_tools(self, _ctx, _params) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    description=f"simulated tool {tool.name}: {tool.latency_ms:g} ms, {tool.result_bytes} B",
                    input_schema=INPUT_SCHEMA,
                    annotations=tool_annotations(tool.kind),
                )
                for tool in self.tools.values()
            ]
        )

    async def call_tool(self, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        """Wait the tool's latency, then its result of its size (or the error the knobs draw)."""
        tool = self.tools.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"unknown tool {params.name!r}")
        wrong = argument_error(params.arguments or {})
        if wrong:
            self.ledger.tool_errors[tool.name] += 1
            raise MCPError(types.INVALID_PARAMS, f"arguments: {wrong}")
        await self.ask_client(ctx)
        await self.wait(ctx, tool.latency_ms / 1000.0)
        self.ledger.tool_calls[tool.name] += 1
        if self.knobs.mcp_error_rate and self.rng.random() < self.knobs.mcp_error_rate:
            self.ledger.tool_errors[tool.name] += 1
            raise MCPError(types.INTERNAL_ERROR, f"simulated failure of tool {tool.name}")
        is_error = bool(self.knobs.mcp_is_error_rate and self.rng.random() < self.knobs.mcp_is_error_rate)
        self.ledger.tool_is_error[tool.name] += is_error
        text = types.TextContent(type="text", text=text_of(tool.result_bytes))
        return types.CallToolResult(content=[text], is_error=is_error)

    async def wait(self, ctx, seconds: float) -> None:
        """The tool's latency, with `--mcp-progress` progress notifications spread over it on the
        call's own stream (the SDK sends them only when the call asked for progress)."""
        steps = self.knobs.mcp_progress
        for done in range(steps):
            await asyncio.sleep(seconds / (steps + 1))
            await ctx.session.report_progress(done + 1, steps + 1)
        await asyncio.sleep(seconds / (steps + 1))

    async def ask_client(self, ctx) -> None:
        """`--mcp-client-requests` server -> client requests (roots/list) per call; a client that cannot
        answer must say so with a JSON-RPC error, which is counted (a client that never answers hangs
        the call: the kit's deadline is the truth then)."""
        for _ in range(self.knobs.mcp_client_requests):
            on_call = ServerMessageMetadata(related_request_id=ctx.request_id)  # on the call's stream
            ask = types.ListRootsRequest()
            try:
                await ctx.session.send_request(ask, types.ListRootsResult, metadata=on_call)
            except MCPError:
                self.ledger.client_refusals += 1

    async def list_resources(self, _ctx, _params) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=RESOURCE_URI, name="doc")])

    async def read_resource(self, _ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if str(params.uri) != RESOURCE_URI:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {params.uri}")
        text = text_of(self.knobs.mcp_result_bytes)
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=RESOURCE_URI, text=text)])

    async def list_prompts(self, _ctx, _params) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name=PROMPT_NAME)])

    async def get_prompt(self, _ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != PROMPT_NAME:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}")
        text = types.TextContent(type="text", text=text_of(self.knobs.mcp_result_bytes))
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])


def _with_version(result: Any, version: str) -> Any:
    """An initialize result claiming another protocol version (the wrong-version knob)."""
    if isinstance(result, dict):
        return {**result, "protocolVersion": version}
    return result.model_copy(update={"protocol_version": version})


def tool_annotations(kind: str) -> types.ToolAnnotations | None:
    """A tool's MCP annotations by its kind (knobs.MCP_TOOL_KINDS)."""
    hints = MCP_TOOL_KINDS[kind]
    return types.ToolAnnotations.model_validate(hints) if hints is not None else None
