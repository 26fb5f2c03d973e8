"""MCP agent (`--gateway mcp`): each simulated agent opens one MCP session, over Streamable HTTP
(`--mcp-url`; HTTP+SSE where the server refuses the POST, agents/mcp/sse_transport.py) or over stdio to a
server
process of its own (`--mcp-command`, agents/mcp/stdio.py): initialize, notifications/initialized,
tools/list; it calls tools by the run's tool mix, and closes the session (a DELETE; over HTTP+SSE, its
stream closed; over stdio, the process ended) when it stops. One requests.csv row per request
(`mcp.initialize`, `mcp.tools_list`, `mcp.tools_call` with its tool, `mcp.resources_read`,
`mcp.prompts_get`, `mcp.ping`, `mcp.close`) with latency, bytes and the JSON-RPC error code; an
`isError` result is a failed tool call. Sessions are agents.csv rows (created, failed, closed), so
capacity, churn and kit.cleanup see them (kit.cleanup speaks MCP over HTTP only).

The client info of every session names the run, so a gateway's own session list shows whose they are.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from typing import Any

import httpx
from locust import between, tag, task
from locust.exception import StopUser

from agents.base import (
    KitAgent,
    classify_status,
    failed_record,
    one_line,
    paced,
    shared_tls_context,
    thinking,
)
from agents.mcp.client import Answer, McpHttpSession, McpSession
from agents.mcp.mix import MIX_OPERATIONS, ToolPicker, tool_mix
from agents.mcp.stdio import McpStdioSession
from agents.wire.target_origin import client_options, path_on
from contract.errors import InputError
from contract.records import AgentRecord, RequestRecord
from contract.schema import AGENT_EVENT, ERROR_RPC, ERROR_TOOL, MCP_OP

CLIENT_NAME = "loadkit"
_SESSION_ORDINALS = itertools.count(1)


def client_info(run_id: str) -> dict:
    """What initialize says of the client: the run id in its name (a gateway's log finds the run)."""
    return {"name": f"{CLIENT_NAME}-{run_id}", "version": "1"}


def fill_answer(record: RequestRecord, answer: Answer) -> None:
    """A row's fields from an MCP answer: HTTP errors, JSON-RPC errors, isError tool results failed."""
    record.status_code, record.response_bytes = answer.status_code, answer.size
    kind = classify_status(answer.status_code) if answer.status_code is not None else None
    if kind:
        record.ok, record.error_kind, record.error = False, kind, one_line(answer.error or "")
    elif answer.error_code is not None:
        record.ok, record.error_kind, record.rpc_error_code = False, ERROR_RPC, answer.error_code
        record.error = one_line(f"{answer.error_code} {answer.error}")
    elif (answer.result or {}).get("isError") is True:
        record.ok, record.error_kind, record.error = False, ERROR_TOOL, one_line(result_text(answer.result))


def result_text(result: dict | None) -> str:
    """The text parts of a tool result (what a model would be given)."""
    content = (result or {}).get("content") or ()
    return "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))


def mcp_call(
    agent: KitAgent,
    session: McpSession,
    operation: str,
    exchange: Callable[[], Answer],
    deferred: list[RequestRecord] | None = None,
    **fields: Any,
) -> Answer | None:
    """One MCP request, timed and reported as a row (with `fields`: tool_name, task_id, step); the
    answer, or None when it failed (the row says why). Off the event loop (the capacity start-up
    clock's thread) the row goes to `deferred`, reported on the loop after."""
    record = RequestRecord(
        ts=time.time(), agent_id=agent.agent_id, operation=operation, session_id=session.session_id, **fields
    )
    started = time.perf_counter()
    answer: Answer | None = None
    try:
        with agent.reported_if_cut(record, started):
            answer = exchange()
        fill_answer(record, answer)
    except Exception as exc:  # every failure becomes a row, never a crash
        failed_record(record, exc, started)
    record.latency_ms = (time.perf_counter() - started) * 1000.0
    record.session_id = record.session_id or session.session_id
    if deferred is None:
        agent.report(record)
    else:
        deferred.append(record)
    return answer if record.ok or record.error_kind == ERROR_TOOL else None


def new_session(
    agent: KitAgent, url: str, command: str | None = None, client: httpx.Client | None = None
) -> McpSession:
    """A session, not yet opened, on the MCP server at `url` (a path or URL on the agent's --host, or on
    the origin of `client`) or, given a `command`, on a server process of its own over stdio."""
    info, settings = client_info(agent.run_id), agent.settings
    offer = settings.mcp_protocol_version
    if command:
        return McpStdioSession(command, agent.bounds, info, offer, settings.mcp_close_timeout)
    client = client or agent.client
    path = path_on(url, str(client.base_url))
    return McpHttpSession(client, path, agent.bounds, info, offer=offer)


def origin_client(agent: KitAgent, url: str | None) -> httpx.Client | None:
    """A client of its own for an MCP URL on another origin than the agent's --host (the agent loop's
    `[tools] mcp`, checked loopback at start: kit/settings.py), guarded to that origin and sent no key
    (the key is --host's); None for a path or a URL on --host's origin."""
    if not url or url.startswith("/"):
        return None
    origin = httpx.URL(url).copy_with(path="/", query=None, fragment=None)
    base = str(origin).rstrip("/")
    if agent.client.base_url.copy_with(path="/") == origin:
        return None
    return httpx.Client(
        base_url=base,
        timeout=httpx.Timeout(agent.settings.request_timeout, connect=10.0),
        verify=shared_tls_context(),
        **client_options(base, None),
    )


def open_session(agent: KitAgent, session: McpSession) -> tuple[McpSession, list[dict] | None]:
    """initialize, notifications/initialized, tools/list: the session and the tools it lists (None
    when the session failed: its agents.csv row says why; over stdio its process is then ended)."""
    started = time.perf_counter()
    answer = mcp_call(agent, session, MCP_OP.initialize, session.initialize)
    error = None if answer is not None else "initialize failed (see requests.csv)"
    tools = None
    if error is None:
        try:
            session.initialized()
        except Exception as exc:
            error = one_line(f"notifications/initialized: {type(exc).__name__}: {exc}")
    if error is None:
        listed = mcp_request(agent, session, "tools/list")
        tools = list((listed.result or {}).get("tools") or ()) if listed is not None else None
        error = None if tools is not None else "tools/list failed (see requests.csv)"
    agent.record(
        AgentRecord(
            ts=time.time(),
            agent_id=agent.agent_id,
            n=next(_SESSION_ORDINALS),
            session_id=session.session_id,
            event=AGENT_EVENT.failed if error else AGENT_EVENT.created,
            ready_ms=None if error else (time.perf_counter() - started) * 1000.0,
            error=error,
        )
    )
    if error:
        session.abandon()
    return session, tools


def close_session(agent: KitAgent, session: McpSession) -> None:
    """Close the session (a row), then its agents.csv closed row; nothing when it has no id or the
    server already ended it."""
    session_id = session.session_id
    if not session_id or session.dropped:
        return
    mcp_call(agent, session, MCP_OP.close, session.close)
    error = session.ended_why() if session.dropped else None
    agent.record_closed(session_id, error)


def replace_session(agent: KitAgent, session: McpSession) -> tuple[McpSession, list[dict] | None]:
    """The server ended `session` (404 to its id; over stdio, its process's output ended): recorded
    closed with the reason, and a new one opened (as MCP asks of a client: every later call on the old
    one would fail)."""
    agent.record_closed(session.session_id, session.ended_why())
    session.end()
    return open_session(agent, session.fresh())


OPERATIONS = {
    "tools/list": MCP_OP.tools_list,
    "tools/call": MCP_OP.tools_call,
    "resources/list": MCP_OP.resources_list,
    "resources/read": MCP_OP.resources_read,
    "prompts/list": MCP_OP.prompts_list,
    "prompts/get": MCP_OP.prompts_get,
    "ping": MCP_OP.ping,
}
MIX_METHODS = {operation: method for method, operation in OPERATIONS.items() if operation in MIX_OPERATIONS}


def mcp_request(
    agent: KitAgent, session: McpSession, method: str, params: dict | None = None
) -> Answer | None:
    """One request of the methods the kit records (OPERATIONS), as its row."""
    return mcp_call(agent, session, OPERATIONS[method], lambda: session.request(method, params))


def tools_call(
    agent: KitAgent, session: McpSession, name: str, arguments: dict, **fields: Any
) -> Answer | None:
    """tools/call of `name`, asking for progress (the server's notifications ride the call's stream)."""
    params = {"name": name, "arguments": arguments, "_meta": {"progressToken": f"{agent.agent_id}-{name}"}}
    return mcp_call(
        agent,
        session,
        MCP_OP.tools_call,
        lambda: session.request("tools/call", params),
        tool_name=name,
        **fields,
    )


class McpAgent(KitAgent):
    """One MCP session per simulated agent; each task is one tools/call by the run's tool mix."""

    weight = 1
    wait_time = thinking(between(0.5, 1.5))

    def on_start(self) -> None:
        self.session: McpSession | None = None
        self.picker: ToolPicker | None = None
        command = self.settings.mcp_command
        if command:
            self.follow_pacing()  # no HTTP client: the transport is the child's stdio
        else:
            super().on_start()
        # held before it opens: an agent stopped mid-open still ends what it started (on_stop)
        self.session = new_session(self, self.settings.mcp_url, command)
        self.session, tools = open_session(self, self.session)
        self.picker = self.picker_for(tools)

    def picker_for(self, tools: list[dict] | None) -> ToolPicker | None:
        """The agent's draws over a newly opened session's lists (None: the session failed); a mix the
        lists do not fit stops the agent (checked before load too: a server that changed its lists)."""
        if tools is None or self.session is None:
            return None
        settings = self.settings
        rng = random.Random(f"{settings.workload.seed}/{self.workload.stream}/mcp")
        mix = tool_mix(settings.mcp_tool_mix, settings.mcp_arguments, settings.mcp_allow_unsafe_tools)
        try:
            listed = self.lists(self.session, mix.lists_needed())
            return ToolPicker(mix, tools, rng, self.tag, listed)
        except InputError as exc:
            raise StopUser(str(exc)) from None

    def lists(self, session: McpSession, methods: list[str]) -> dict[str, list[dict]]:
        """The resources or prompts a mix draws from, listed once per session (a row each)."""
        found: dict[str, list[dict]] = {}
        for method in methods:
            answer = mcp_request(self, session, method)
            key = method.split("/")[0]  # resources/list answers {"resources": [...]}
            found[method] = list((answer.result or {}).get(key) or ()) if answer is not None else []
        return found

    def on_stop(self) -> None:
        if self.session is not None:
            if self.settings.cleanup:
                close_session(self, self.session)
            self.session.end()
        super().on_stop()

    @tag("mcp")
    @task
    @paced
    def call_tool(self) -> None:
        if self.session is not None and self.picker is not None:
            name, params = self.picker.next()
            if name in MIX_METHODS:
                mcp_request(self, self.session, MIX_METHODS[name], params or None)
            else:
                tools_call(self, self.session, name, params)
            if self.session.dropped:
                self.session, tools = replace_session(self, self.session)
                self.picker = self.picker_for(tools)
