"""A replayed copy's recorded MCP tool calls (docs/record-replay.md): each sent as recorded (the tool, its
arguments) as a tools/call on the gateway's MCP endpoint (`--mcp-url`), through the MCP agent's own session
code (agents/mcp/agent.py), so its rows are `mcp.tools_call` rows like every MCP agent's. A copy opens its MCP
session at its first recorded tool call and closes it at its end: the recording's own session id is never
used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents.mcp.agent import close_session, new_session, open_session, tools_call
from agents.mcp.client import McpSession
from scenarios.workloads.session_file import RecordedToolCall


@dataclass
class CopyTools:
    """One copy's MCP session for its recorded tool calls (None until its first)."""

    agent: Any  # the ReplayAgent
    task_id: str
    session: McpSession | None = None
    open_failed: bool = False

    def call(self, recorded: RecordedToolCall, step: int | None) -> str | None:
        """The recorded call sent; why the copy cannot go on (its session would not open, or the call
        failed where the recording's was answered), else None."""
        if self.session is None:
            url = self.agent.settings.mcp_url
            self.session, tools = open_session(self.agent, new_session(self.agent, url))
            self.open_failed = tools is None
        if self.open_failed:
            return "the copy's MCP session failed to open (see requests.csv)"
        fields = {"task_id": self.task_id, "step": step}
        answer = tools_call(self.agent, self.session, recorded.name, recorded.arguments, **fields)
        if answer is None and recorded.answered:
            return f"tools/call {recorded.name} failed (see requests.csv)"
        return None

    def close(self, cleanup: bool) -> None:
        """At the copy's end: its session closed (with --cleanup: a row) and released."""
        if self.session is not None:
            if cleanup and not self.open_failed:
                close_session(self.agent, self.session)
            self.session.end()
            self.session = None
