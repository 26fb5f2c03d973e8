"""MCP spoken to the target outside the load: a session of the run's own, opened before load to check
the tool mix against the server's lists (kit/mcp_start.py), and the liveness probe of an MCP server, which
MCP gives no `/health`: its session opened by `initialize`, then a `ping` on it each probe (kit/liveness.py).
They carry the key the agents carry. No rows: neither is load.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from agents.base import auth_headers, shared_tls_context
from agents.mcp.agent import client_info
from agents.mcp.client import Answer, McpHttpSession, McpSession
from agents.mcp.messages import McpProtocolError
from agents.mcp.stdio import McpStdioSession
from agents.settings import AgentSettings
from agents.wire.reading import ReadBounds
from agents.wire.target_origin import client_options, path_on

CLOSE_WAIT_S = 10.0  # the probe's last DELETE, at the run's end
PROBE_SUFFIX = "-probe"  # its sessions' client name: loadkit-RUN_ID-probe (the agents' own: loadkit-RUN_ID)


def probe_client(settings: AgentSettings, base_url: str, timeout_s: float) -> httpx.Client:
    """A client of the target, with the agents' key (a gateway that needs one answers a probe without it
    with 401 or 500) and --host's credentials."""
    return httpx.Client(
        base_url=base_url,
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        headers=auth_headers(settings.api_key_env),
        verify=shared_tls_context(),
        **client_options(base_url, settings.host_auth),
    )


def probe_session(settings: AgentSettings, client: httpx.Client | None, bounds: ReadBounds) -> McpSession:
    """A session like the agents' (stdio given `--mcp-command`, else Streamable HTTP on `client`), its
    client name the agents' with PROBE_SUFFIX: a server's session list tells the kit's own apart."""
    info = client_info(settings.run_id)
    info, offer = {**info, "name": info["name"] + PROBE_SUFFIX}, settings.mcp_protocol_version
    if settings.mcp_command:
        return McpStdioSession(settings.mcp_command, bounds, info, offer, settings.mcp_close_timeout)
    assert client is not None  # an HTTP target has a client
    path = path_on(settings.mcp_url, str(client.base_url))
    return McpHttpSession(client, path, bounds, info, offer=offer)


def opened(session: McpSession) -> None:
    """initialize and notifications/initialized; McpProtocolError saying what failed."""
    answer = session.initialize()
    if not answer.ok:
        raise McpProtocolError(f"initialize answered {failure(answer)}")
    session.initialized()


def listed(session: McpSession, method: str) -> list[dict]:
    """The items of a list request (tools/list, resources/list, prompts/list)."""
    answer = session.request(method)
    if not answer.ok:
        raise McpProtocolError(f"{method} answered {failure(answer)}")
    return list((answer.result or {}).get(method.split("/")[0]) or ())


def failure(answer: Answer) -> str:
    if answer.error_code is not None:
        return f"JSON-RPC error {answer.error_code} {answer.error or ''}".strip()
    return f"HTTP {answer.status_code} {answer.error or ''}".strip()


@dataclass
class McpPing:
    """The liveness probe of an MCP server: alive while it answers MCP. A session opened at the first
    probe (initialize), a ping on it at each next; a session the server ended is opened anew. A JSON-RPC
    error answer is alive (the server spoke); no answer, a 5xx or what is not MCP is a failure.
    `on_session` is told the id of the session it holds open on the server (None once none is): a run
    killed meanwhile leaves that one open, and kit.cleanup finds it in run.json."""

    settings: AgentSettings
    base_url: str
    timeout_s: float
    on_session: Callable[[str | None], None] = field(default=lambda _sid: None, repr=False)
    session: McpSession | None = None
    client: httpx.Client | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + path_on(self.settings.mcp_url, self.base_url)

    def probe(self) -> str | None:
        """None when the server answered MCP, else what failed (one line)."""
        try:
            if self.session is None or self.session.dropped:
                self._open()
                return None
            answer = self.session.request("ping")
        except Exception as exc:  # any failure is the probe's, and the session is spent
            self._drop()
            return f"{type(exc).__name__}: {exc}"[:200]
        status = answer.status_code or 0
        return f"ping answered HTTP {status}" if status >= 500 else None

    def _open(self) -> None:
        self._drop()
        if self.client is None:
            self.client = probe_client(self.settings, self.base_url, self.timeout_s)
        settings = self.settings
        bounds = ReadBounds(self.timeout_s, settings.max_response_bytes, settings.max_sse_line_bytes)
        session = probe_session(self.settings, self.client, bounds)
        self.session = session
        opened(session)
        self.on_session(session.session_id)

    def _drop(self) -> None:
        if self.session is not None:
            with contextlib.suppress(Exception):
                self.session.abandon()
            self.session = None
            self.on_session(None)

    def close(self) -> None:
        """The probe's session closed on the server, its client closed. The DELETE is given CLOSE_WAIT_S,
        not the probe's deadline: the run is over, and a close cut short would leave the session open."""
        if isinstance(self.session, McpHttpSession) and self.client is not None:
            wait = max(self.timeout_s, CLOSE_WAIT_S)
            self.session.bounds = dataclasses.replace(self.session.bounds, deadline_s=wait)
            self.client.timeout = httpx.Timeout(wait, connect=min(wait, 10.0))
        self._drop()
        if self.client is not None:
            self.client.close()
            self.client = None
