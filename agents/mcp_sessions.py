"""Capacity, churn and kit.cleanup on MCP sessions: a session is an answered `initialize` (the run id in
its client info) and `notifications/initialized`; ready once both are; a churn prompt is a `tools/list`;
close is the DELETE with its `Mcp-Session-Id`. Opening runs on the start-up clock's thread (its client,
its rows handed back), prompts and closes on the loop.

Over HTTP+SSE (the server refused the initialize POST, agents/mcp_sse.py) a session is its event stream,
held by the clock's client: its prompts and its close run on the clock's thread too (a socket belongs to
the hub that made it), and once one session fell back the next are opened over HTTP+SSE at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agents.base import KitAgent, one_line
from agents.idle_sessions import CONNECTION_FRESH, Opened, RestSessionClient
from agents.mcp import client_info, mcp_call, mcp_request
from agents.mcp_wire import PROTOCOL_VERSION, Answer, McpHttpSession
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
        self.streams: dict[str, McpHttpSession] = {}  # open HTTP+SSE session id -> it (on the clock)
        self.sse_known = False  # a session fell back: the server speaks HTTP+SSE

    def _open(self, n: int, rows: list[RequestRecord]) -> Opened:
        started = time.perf_counter()
        assert self.clock.client is not None  # made on the clock's thread before any work
        info = client_info(self.agent.run_id)
        session = McpHttpSession(self.clock.client, self.path, self.agent.bounds, info, self.sse_known)
        answer = mcp_call(self.agent, session, MCP_OP.initialize, session.initialize, deferred=rows)
        if answer is None or not session.session_id:
            session.end()  # over HTTP+SSE, its stream
            why = "no Mcp-Session-Id in the answer" if answer is not None else "initialize failed"
            return Opened(None, None, f"{why} (see requests.csv)")
        self.versions[session.session_id] = session.protocol_version or PROTOCOL_VERSION
        if session.channel is not None:
            self.streams[session.session_id] = session
            self.sse_known = True
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
        stream = self.streams.get(session_id)
        if stream is not None:
            listed = self.on_clock(stream, MCP_OP.tools_list, lambda: stream.request("tools/list"))
            return listed is not None
        return mcp_request(self.agent, self.on_loop(session_id), "tools/list") is not None

    def close(self, session_id: str) -> str | None:
        self.versions.pop(session_id, None)
        stream = self.streams.pop(session_id, None)
        if stream is not None:
            closed = self.on_clock(stream, MCP_OP.close, stream.close) is not None
            return None if closed else "the MCP session's stream did not close (see requests.csv)"
        session = self.on_loop(session_id)
        answer = mcp_call(self.agent, session, MCP_OP.close, session.close)
        return None if answer is not None else "the MCP session's DELETE failed (see requests.csv)"

    def on_clock(
        self, session: McpHttpSession, operation: str, exchange: Callable[[], Answer]
    ) -> Answer | None:
        """One request of an HTTP+SSE session on the clock's thread, where its stream lives; the row
        reported on the loop after."""
        rows: list[RequestRecord] = []
        answer = self.clock.run(lambda: mcp_call(self.agent, session, operation, exchange, deferred=rows))
        for row in rows:
            self.agent.report(row)
        return answer

    def shutdown(self) -> None:
        """The streams of HTTP+SSE sessions still held (their close failed) ended, then the clock."""
        streams, self.streams = list(self.streams.values()), {}

        def end_all() -> None:
            for stream in streams:
                stream.end()

        if streams:
            self.clock.run(end_all)
        super().shutdown()
