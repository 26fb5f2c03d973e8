"""Capacity, churn and kit.cleanup on MCP sessions: a session is an answered `initialize` (the run id in
its client info) and `notifications/initialized`; ready once both are; a churn prompt is a `tools/list`;
close is the DELETE with its `Mcp-Session-Id`. Opening runs on the start-up clock's thread (its client,
its rows handed back), prompts and closes on the loop.
"""

from __future__ import annotations

import time

from agents.base import KitAgent, one_line
from agents.idle_sessions import CONNECTION_FRESH, Opened, RestSessionClient
from agents.mcp import client_info, mcp_call, mcp_request
from agents.mcp_wire import PROTOCOL_VERSION, McpHttpSession
from agents.spec import SessionSteps
from agents.target_origin import path_on
from contract.records import RequestRecord
from contract.schema import MCP_OP


class McpSessionClient(RestSessionClient):
    """The SessionSteps say only that MCP sessions open and close; the MCP client does the speaking."""

    def __init__(self, agent: KitAgent, steps: SessionSteps, connection: str = CONNECTION_FRESH) -> None:
        super().__init__(agent, steps, connection)
        self.path = path_on(agent.settings.mcp_url, agent.environment.host or "")
        self.versions: dict[str, str] = {}  # open session id -> its protocol version

    def _open(self, n: int, rows: list[RequestRecord]) -> Opened:
        started = time.perf_counter()
        assert self.clock.client is not None  # made on the clock's thread before any work
        session = McpHttpSession(
            self.clock.client, self.path, self.agent.bounds, client_info(self.agent.run_id)
        )
        answer = mcp_call(self.agent, session, MCP_OP.initialize, session.initialize, deferred=rows)
        if answer is None or not session.session_id:
            why = "no Mcp-Session-Id in the answer" if answer is not None else "initialize failed"
            return Opened(None, None, f"{why} (see requests.csv)")
        self.versions[session.session_id] = session.protocol_version or PROTOCOL_VERSION
        try:
            session.initialized()
        except Exception as exc:
            return Opened(session.session_id, None, one_line(f"notifications/initialized: {exc}"))
        return Opened(session.session_id, (time.perf_counter() - started) * 1000.0, None)

    def on_loop(self, session_id: str) -> McpHttpSession:
        """The session spoken to from the loop, on the agent's own client."""
        session = McpHttpSession(
            self.agent.client, self.path, self.agent.bounds, client_info(self.agent.run_id)
        )
        session.session_id = session_id
        session.protocol_version = self.versions.get(session_id, PROTOCOL_VERSION)
        return session

    def prompt(self, session_id: str) -> bool:
        return mcp_request(self.agent, self.on_loop(session_id), "tools/list") is not None

    def close(self, session_id: str) -> str | None:
        session = self.on_loop(session_id)
        answer = mcp_call(self.agent, session, MCP_OP.close, session.close)
        self.versions.pop(session_id, None)
        return None if answer is not None else "the MCP session's DELETE failed (see requests.csv)"
