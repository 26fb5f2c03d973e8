"""The capacity/churn session protocol spoken for one serial driver: open one idle agent session (a request
or a short sequence), know it is ready, prompt it once (churn), close it; ids come from the replies.

Clients over HTTP (SessionSteps from a preset or a spec file's [capacity]) and over ACP's stdio (MCP's
stdio client is agents/capacity/mcp_sessions.py; both are LaunchingClients, the processes they start the
target). They
measure no memory and decide no stop; they close only sessions they opened themselves.
"""

from __future__ import annotations

import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from agents.base import DEFAULT_PROMPT, KitAgent, auth_headers, one_line, shared_tls_context
from agents.capacity.startup_clock import StartupClock
from agents.gateways.acp import (
    AcpError,
    AcpProcess,
    acp_call,
    initialize_acp,
    open_acp_session,
    prompt_params,
)
from agents.gateways.spec import ReadyCheck, RequestTemplate, SessionSteps, id_not_found, json_path, render
from agents.wire.target_origin import client_options
from contract.errors import InputError
from contract.records import RequestRecord

READY_POLL_S = 0.01  # between polls of a session's readiness: short, the start-up time is measured
CONNECTION_FRESH = "fresh"  # a new TCP connection per request: what an agent's first contact meets
CONNECTION_KEEP_ALIVE = "keep-alive"


class SessionSetupError(InputError):
    """A session protocol that cannot start (e.g. no assistant to run its sessions on); one line."""


@dataclass(frozen=True)
class AcpSessions:
    """ACP over stdio: one agent process per session (the seed's model), or sessions in one process."""

    per_process: bool


@dataclass(frozen=True)
class Opened:
    session_id: str | None
    ready_ms: float | None
    error: str | None


def session_http_client(agent: KitAgent, connection: str) -> httpx.Client:
    """An HTTP client with TCP_NODELAY. `fresh` asks for a connection per request (`Connection: close`),
    so a gateway that writes headers and body apart meets no delayed-ACK stall, which a keep-alive
    client adds (~40 ms, docs/field-notes.md). httpx's max_keepalive_connections=0 still stalls: not used."""
    headers = auth_headers(agent.settings.api_key_env)
    if connection != CONNECTION_KEEP_ALIVE:
        headers["Connection"] = "close"
    base_url = agent.environment.host or ""
    return httpx.Client(
        base_url=base_url,
        timeout=httpx.Timeout(agent.settings.request_timeout, connect=10.0),
        headers=headers,
        limits=httpx.Limits(max_connections=8, max_keepalive_connections=8),
        transport=httpx.HTTPTransport(
            verify=shared_tls_context(), socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        ),
        **client_options(base_url, agent.settings.host_auth),
    )


class RestSessionClient:
    """Speaks SessionSteps through the driver's `json_call` (every request is a row in requests.csv).
    Subclasses named by a preset's `session_client` add what the steps cannot say (a close over RPC).
    Creates run on the start-up clock's thread; prompts and closes on the loop."""

    def __init__(self, agent: KitAgent, steps: SessionSteps, connection: str = CONNECTION_FRESH) -> None:
        self.agent = agent
        self.steps = steps
        self.assistant_id = agent.settings.assistant_id
        self.clock = StartupClock(lambda: session_http_client(agent, connection))

    @classmethod
    def can_close(cls, steps: SessionSteps) -> bool:
        """Whether this client can close a session (churn refuses a protocol that cannot)."""
        return steps.close is not None

    def start(self) -> None:
        """Nothing to start: the gateway is already serving. Steps naming {assistant_id} need one."""
        if self.assistant_id is None and self.steps.uses("assistant_id"):
            raise SessionSetupError("the session steps name {assistant_id}: pass --assistant-id")

    def open(self, n: int) -> Opened:
        """One session created and awaited on the start-up clock; its requests' rows reported after."""
        rows: list[RequestRecord] = []
        opened = self.clock.run(self._open, n, rows)
        for row in rows:
            self.agent.report(row)
        return opened

    def _open(self, n: int, rows: list[RequestRecord]) -> Opened:
        started = time.perf_counter()
        first, *then = self.steps.create
        reply, error = self.send(first, None, n, rows)
        id_path = first.id_path or "id"  # parse_capacity requires it
        session_id = json_path(reply, id_path) if reply is not None else None
        if session_id is None:
            return Opened(None, None, error or id_not_found(first, reply))
        session_id = str(session_id)
        for step in then:
            reply, error = self.send(step, session_id, n, rows)
            if reply is None:
                return Opened(session_id, None, error)
        check, error = self.steps.ready, None
        if check is not None and not says_ready(check, reply):
            error = self.wait_ready(check, session_id, n, rows)
        ready_ms = (time.perf_counter() - started) * 1000.0
        return Opened(session_id, None if error else ready_ms, error)

    def wait_ready(self, check: ReadyCheck, session_id: str, n: int, rows: list[RequestRecord]) -> str | None:
        """Poll until the session's status is a ready value; the error when it failed or timed out."""
        deadline = time.monotonic() + self.agent.settings.request_timeout
        while time.monotonic() < deadline:
            reply, error = self.send(check.request, session_id, n, rows)
            status = str(json_path(reply, check.status_path)) if reply is not None else None
            if status in check.ready:
                return None
            if reply is None or status in check.failed:
                return error or f"session {session_id} status {status}"
            time.sleep(READY_POLL_S)
        return f"session {session_id} not ready within --request-timeout"

    def prompt(self, session_id: str) -> bool:
        if self.steps.prompt is None:
            return True
        return self.send(self.steps.prompt, session_id, 0)[0] is not None

    def close(self, session_id: str) -> str | None:
        if self.steps.close is None:
            return "the gateway's protocol has no close step: the session stays open"
        return self.send(self.steps.close, session_id, 0)[1]

    def shutdown(self) -> None:
        """The start-up clock's thread and client (nothing the kit started on the gateway)."""
        self.clock.close()

    def send(
        self,
        template: RequestTemplate,
        session_id: str | None,
        n: int,
        rows: list[RequestRecord] | None = None,
    ) -> tuple[dict | None, str | None]:
        """One templated request: (reply, None) or (None, error). With `rows` it runs on the start-up
        clock's thread: its client, its row left in `rows`."""
        values = self.values(session_id, n)
        kwargs: dict[str, Any] = {"headers": render(template.headers, values)} if template.headers else {}
        if template.body is not None:
            kwargs["json"] = render(template.body, values)
        body, record = self.agent.json_call(
            template.operation,
            template.method,
            str(render(template.path, values)),
            ids={"session_id": session_id},
            check=self.rpc_error,
            client=self.clock.client if rows is not None else None,
            deferred=rows,
            **kwargs,
        )
        if body is not None:
            return body, None
        status = f"HTTP {record.status_code}: " if record.status_code else ""
        return None, f"{template.operation} {status}{record.error or 'failed'}"

    def rpc_error(self, body: dict) -> tuple[str, str] | None:
        path = self.steps.error_path
        error = json_path(body, path) if path else None
        return None if error is None else ("rpc", one_line(error))

    def session_key(self, n: int) -> str:
        """The name the kit gives the n-th session (it carries the run id)."""
        return f"loadkit-{self.agent.run_id}-{n}"

    def values(self, session_id: str | None, n: int) -> dict[str, str]:
        agent = self.agent
        return {
            "run_id": agent.run_id,
            "agent_id": agent.agent_id,
            "session": self.session_key(n),
            "prompt": agent.settings.prompt or DEFAULT_PROMPT,
            "model": agent.settings.model,
            "id": session_id or "",
            "n": str(n),
            "uuid": uuid.uuid4().hex,
            "assistant_id": self.assistant_id or "",  # start() refused steps that need one
            "a2a_path": agent.settings.a2a_path,
        }


def says_ready(check: ReadyCheck, reply: dict | None) -> bool:
    """A create reply that already carries a ready status at the poll's path needs no poll: a request
    more would add its own round trip (~3-5 ms here) to the start-up figure, not the gateway's time."""
    return reply is not None and str(json_path(reply, check.status_path)) in check.ready


class LaunchingClient(Protocol):
    """A session client whose sessions live in processes it launched itself and speaks to over their stdio
    (ACP's agents, MCP's stdio servers): those processes are the capacity target (`pids`)."""

    def start(self) -> None: ...
    def open(self, n: int) -> Opened: ...
    def prompt(self, session_id: str) -> bool: ...
    def close(self, session_id: str) -> str | None: ...
    def shutdown(self) -> None: ...
    def pids(self) -> set[int]: ...


class AcpSessionClient:
    """ACP sessions: per process (close = stop that process) or in one shared process (close =
    session/close when the agent advertises sessionCapabilities.close)."""

    def __init__(self, agent: KitAgent, protocol: AcpSessions) -> None:
        self.agent = agent
        self.per_process = protocol.per_process
        self.command = agent.settings.acp_command or ""
        self.processes: dict[str, AcpProcess] = {}
        self.shared: AcpProcess | None = None

    def start(self) -> None:
        """The shared agent process is part of the baseline; per-process mode starts from none."""
        if not self.per_process:
            self.shared = AcpProcess(self.command)
            initialize_acp(self.agent, self.shared)

    def pids(self) -> set[int]:
        """The agent processes this client launched and has not stopped (the capacity target)."""
        shared = {self.shared.pid} if self.shared is not None else set()
        return shared | {process.pid for process in self.processes.values()}

    def process_for(self, session_id: str | None) -> AcpProcess:
        """The session's own process, the shared one, or (opening, per process) a new one."""
        if self.per_process:
            return self.processes[session_id] if session_id else AcpProcess(self.command)
        if self.shared is None:
            raise AcpError("the shared agent process is not running")
        return self.shared

    def open(self, n: int) -> Opened:
        started = time.perf_counter()
        process = self.process_for(None)
        session_id = open_acp_session(self.agent, process, initialize=self.per_process)
        if session_id is None:
            if self.per_process:
                process.stop()
            return Opened(None, None, "ACP session did not open (see requests.csv)")
        if self.per_process:
            self.processes[session_id] = process
        return Opened(session_id, (time.perf_counter() - started) * 1000.0, None)

    def prompt(self, session_id: str) -> bool:
        process = self.process_for(session_id)
        params = prompt_params(session_id, self.agent.tagged_prompt())
        return acp_call(self.agent, process, "acp.prompt", "session/prompt", params, session_id) is not None

    def close(self, session_id: str) -> str | None:
        if self.per_process:
            process = self.processes.pop(session_id, None)
            if process is not None:
                process.stop()
            return None
        shared = self.process_for(session_id)
        if "close" not in (shared.agent_capabilities.get("sessionCapabilities") or {}):
            return "the agent does not advertise session/close: the session ends with its process"
        reply = acp_call(
            self.agent,
            shared,
            "acp.session_close",
            "session/close",
            {"sessionId": session_id},
            session_id,
        )
        return None if reply is not None else "session/close failed (see requests.csv)"

    def shutdown(self) -> None:
        for process in self.processes.values():
            process.stop()
        self.processes.clear()
        if self.shared is not None:
            self.shared.stop()
            self.shared = None


def close_and_record(agent: KitAgent, client: RestSessionClient | LaunchingClient, session_id: str) -> bool:
    """Close one session and record it in agents.csv: `closed`, or `close_failed` with the reason."""
    error = client.close(session_id)
    agent.record_closed(session_id, error, failed=error is not None)
    return error is None
