"""Capacity, churn and kit.cleanup on MCP sessions: a session is an answered `initialize` (the run id in
its client info) and `notifications/initialized`; ready once both are; a churn prompt is a `tools/list`.
Over Streamable HTTP close is the DELETE with its `Mcp-Session-Id`; opening runs on the start-up clock's
thread (its client, its rows handed back), prompts and closes on the loop. Over stdio (`--mcp-command`)
a session is a server process of its own, started by its open and ended by its close, all on the loop.

Over HTTP+SSE (the server refused the initialize POST, agents/mcp/sse_transport.py) a session is its event
stream,
held by the clock's client: its prompts and its close run on the clock's thread too (a socket belongs to
the hub that made it), and once one session fell back the next are opened over HTTP+SSE at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from agents.base import KitAgent, one_line
from agents.capacity.idle_sessions import CONNECTION_FRESH, AcpSessions, Opened, RestSessionClient
from agents.gateways.spec import SessionSteps
from agents.mcp.agent import client_info, mcp_call, mcp_request
from agents.mcp.client import PROTOCOL_VERSION, Answer, McpHttpSession
from agents.mcp.stdio import WHAT, McpStdioSession
from agents.wire.target_origin import path_on
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
        info, offer = client_info(self.agent.run_id), self.agent.settings.mcp_protocol_version
        session = McpHttpSession(self.clock.client, self.path, self.agent.bounds, info, self.sse_known, offer)
        answer = mcp_call(self.agent, session, MCP_OP.initialize, session.initialize, deferred=rows)
        if answer is None or not session.session_id:
            session.abandon()  # closed where it was opened; over HTTP+SSE, its stream
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


class McpStdioSessionClient:
    """MCP sessions over stdio, one server process each (agents/mcp/stdio.py): open starts the process and
    speaks initialize and notifications/initialized; close is its stdin closed and its exit awaited. On
    the loop, as ACP's processes are (gevent's pipes live on its hub); the processes are the target."""

    def __init__(self, agent: KitAgent, _protocol: SessionSteps | AcpSessions) -> None:
        self.agent = agent
        self.command = agent.settings.mcp_command or ""
        self.sessions: dict[str, McpStdioSession] = {}  # open session id (stdio-PID) -> its session

    def start(self) -> None:
        """Nothing to start: each session brings its own process, so the baseline has none."""

    def pids(self) -> set[int]:
        """The server processes of the sessions open now (the capacity target)."""
        return {session.child.pid for session in self.sessions.values() if session.child is not None}

    def open(self, n: int) -> Opened:
        """A session whose handshake failed has its process stopped at once: it is no session to close."""
        started = time.perf_counter()
        settings = self.agent.settings
        session = McpStdioSession(
            self.command,
            self.agent.bounds,
            client_info(self.agent.run_id),
            settings.mcp_protocol_version,
            settings.mcp_close_timeout,
        )
        error = None
        if mcp_call(self.agent, session, MCP_OP.initialize, session.initialize) is None:
            error = "initialize failed (see requests.csv)"
        else:
            try:
                session.initialized()
            except Exception as exc:
                error = one_line(f"notifications/initialized: {exc}")
        if error is not None or session.session_id is None:
            session.end()
            return Opened(None, None, error)
        self.sessions[session.session_id] = session
        return Opened(session.session_id, (time.perf_counter() - started) * 1000.0, None)

    def prompt(self, session_id: str) -> bool:
        return mcp_request(self.agent, self.sessions[session_id], "tools/list") is not None

    def close(self, session_id: str) -> str | None:
        """The row's verdict; the process is ended whatever it says (none outlives the run)."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return None
        answer = mcp_call(self.agent, session, MCP_OP.close, session.close)
        session.end()
        return None if answer is not None else f"the {WHAT} did not exit when asked (see requests.csv)"

    def shutdown(self) -> None:
        for session in self.sessions.values():
            session.end()
        self.sessions.clear()
