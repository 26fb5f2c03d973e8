"""The agent loop's tools served by an MCP server (`[tools] mcp = URL`: on --host's origin or on another
loopback one, a gateway of its own; or a command: a server process per agent over stdio,
agents/mcp/stdio.py): one MCP session per agent, opened at its first task; the
server's tools/list is what the model is offered, and each tool call the model makes is a tools/call on
that server, its real latency and result feeding the next step.

Its requests are rows of their own (agents/mcp/agent.py) carrying the task's task_id and step; the session is
closed when the agent stops. It must not parse a model's response (the agents' readers do).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import gevent

from agents.loop.tool_deltas import ToolCall
from agents.mcp.agent import (
    close_session,
    new_session,
    open_session,
    origin_client,
    replace_session,
    result_text,
    tools_call,
)
from agents.mcp.client import McpSession
from agents.wire.request_body import SharedParts
from scenarios.workloads.tool_loop import ToolsSection


def chat_schema(tool: dict) -> dict:
    """An MCP tool as chat completions offers a function."""
    function = {
        "name": tool["name"],
        "description": tool.get("description") or "",
        "parameters": tool.get("inputSchema") or {"type": "object"},
    }
    return {"type": "function", "function": function}


class McpTools:
    """One agent's MCP session for its loop's tools, and what the model is offered from it (its schemas
    encoded once, in `parts`)."""

    def __init__(self, agent: Any, section: ToolsSection) -> None:
        self.client = None if section.mcp_command else origin_client(agent, section.mcp_url)
        session = new_session(agent, section.mcp_url or "", section.mcp_command, self.client)
        self.session: McpSession | None
        self.session, tools = open_session(agent, session)
        self.section = (
            dataclasses.replace(section, schemas=tuple(chat_schema(t) for t in tools))
            if tools is not None
            else None
        )
        self.parts = SharedParts()

    @property
    def schema_chars(self) -> int:
        schemas = self.section.schemas if self.section is not None else ()
        return len(json.dumps(list(schemas), separators=(",", ":")))

    def run(self, agent: Any, calls: list[ToolCall], task_id: str, step: int) -> list[str]:
        """Each call as a tools/call (all at once when the section's runs are concurrent); the results'
        texts (a failed call's result says so, as a tool would to a model)."""
        assert self.session is not None and self.section is not None

        def one(call: ToolCall) -> str:
            try:
                arguments = json.loads(call.arguments or "{}")
            except ValueError:
                arguments = {}
            assert self.session is not None
            answer = tools_call(agent, self.session, call.name, arguments, task_id=task_id, step=step)
            return result_text(answer.result) if answer is not None else f"tool {call.name} failed"

        if not self.section.concurrent or len(calls) < 2:
            results = [one(call) for call in calls]
        else:
            greenlets = [gevent.spawn(one, call) for call in calls]
            gevent.joinall(greenlets, raise_error=True)
            results = [g.value for g in greenlets]
        if self.session.dropped:  # the server ended it: the next step's calls go to a new one
            self.session, tools = replace_session(agent, self.session)
            self.section = self.section if tools is not None else None
        return results

    def close(self, agent: Any, cleanup: bool) -> None:
        """The session closed (with --cleanup: a row), and whatever it holds here released."""
        if self.session is not None:
            if cleanup:
                close_session(agent, self.session)
            self.session.end()
            self.session = None
        if self.client is not None:
            self.client.close()
            self.client = None


def mcp_tools_of(agent: Any, section: ToolsSection) -> McpTools:
    """The agent's MCP tools (the session opened on first use)."""
    if agent.mcp_tools is None:
        agent.mcp_tools = McpTools(agent, section)
    return agent.mcp_tools


def close_mcp_tools(agent: Any) -> None:
    """At the agent's stop: its loop's MCP session closed (when it has one; a stdio server's process
    ends whatever --cleanup says)."""
    found, agent.mcp_tools = agent.mcp_tools, None
    if found is not None:
        found.close(agent, agent.settings.cleanup)
