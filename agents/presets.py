"""`--gateway NAME` presets: for each kind of gateway, which agent classes speak to it, how to check it is
healthy, where its queue length is read, its session-stickiness convention and sensible option defaults.

A table of data only: it names agent classes by import path (resolved on demand) and never opens a
connection. Unknown names fail with one line listing the known ones. Each preset also names its idle
session protocol for the capacity and churn profiles (agents/capacity/session_steps.py), or says why it has
none.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agents.capacity import session_steps
from agents.capacity.idle_sessions import AcpSessions, LaunchingClient, RestSessionClient
from agents.gateways.spec import SessionSteps, SpecError, load_spec
from agents.settings import AgentSettings
from contract.errors import InputError


class GatewayError(InputError):
    """An unknown preset name or an unusable spec file; the message is one line for the user."""


@dataclass(frozen=True)
class QueueProbe:
    """Where the sampler reads the gateway's own queue: a path on the target and dotted JSON fields (the
    queue length, in-progress count and, where the figures are a cached reading, its age in seconds)."""

    path: str
    queue_field: str
    in_progress_field: str | None = None
    age_field: str | None = None


@dataclass(frozen=True)
class GatewayPreset:
    name: str
    agent_classes: tuple[str, ...]  # "module:Class", resolved by agent_classes()
    health_path: str
    summary: str
    queue: QueueProbe | None = None
    # An unset option's value for this gateway, keyed by the option's dest (an AgentSettings field):
    # session_header (a header name, or "user": the body field), api_key_env (the variable holding the
    # bearer key), model...
    defaults: dict[str, object] = field(default_factory=dict)
    sessions: SessionSteps | AcpSessions | None = None  # capacity/churn: open, ready, prompt, close
    no_sessions: str = ""  # why capacity/churn cannot run against it (when `sessions` is None)
    # the class speaking SessionSteps ("module:Class")
    session_client: str = "agents.capacity.idle_sessions:RestSessionClient"
    # Capacity/churn when `stdio_command` is given: the client of sessions in the processes it launches
    # (an idle_sessions.LaunchingClient, "module:Class"); none: capacity/churn speak HTTP only.
    stdio_session_client: str = ""
    # Behaviour flags, read by the run instead of the preset's name:
    embedded_simulator: bool = False  # with neither --host nor --target-cmd, start the kit's simulator
    stdio_agents: bool = False  # agents launch their own process (`stdio_command` must be given)
    # The command each agent launches and speaks to over its stdio, read off the settings (None: not
    # given), and the option giving it; when given, there is no URL to load (ACP always; MCP with
    # --mcp-command).
    stdio_command: Callable[[AgentSettings], str | None] | None = None
    stdio_flag: str = ""
    lowercases_keys: bool = False  # the gateway lower-cases session keys (which carry the run id)
    # Its session header makes the gateway answer from the history it stored, not the body's: a replay
    # (--sessions), whose bodies carry the recorded history, sends none unless --session-header is given
    stored_history: bool = False
    calls_mcp: bool = False  # its agents speak MCP: the embedded simulator loads its MCP endpoint first
    # --target-match counts only processes whose environment gives this variable the kit's own value
    # (the gateway the kit was pointed at, not another user's or another home's on the same host)
    match_env: str = ""
    # A path listing a run's sessions as JSON `data[]` of `id` and `status` ({run_id} filled in): the
    # sessions a run's rows show open are checked against it ("closed", or absent: not open)
    session_listing: str = ""

    @property
    def session_header(self) -> str | None:
        """Its session-stickiness convention: a header name, or "user" (the body field)."""
        return _text(self.defaults.get("session_header"))

    @property
    def api_key_env(self) -> str | None:
        """The environment variable holding its bearer key."""
        return _text(self.defaults.get("api_key_env"))


def _text(value: object) -> str | None:
    return None if value is None else str(value)


CHAT = "agents.gateways.openai_chat:ChatAgent"
REPLAY = "agents.replay.recorded_agent:ReplayAgent"  # with --sessions, whatever the gateway (kit.startup)

PRESETS: dict[str, GatewayPreset] = {
    preset.name: preset
    for preset in (
        GatewayPreset(
            name="simulator",
            agent_classes=(
                CHAT,
                "agents.gateways.task_board:TaskAgent",
                "agents.capacity.idle_agents:SessionAgent",
            ),
            health_path="/health",
            summary="the kit's simulated gateway (chat, task board, idle sessions)",
            queue=QueueProbe("/v1/board/inspect", "queue_length", "in_progress"),
            defaults={"session_header": "user"},
            sessions=session_steps.SIMULATOR,
            embedded_simulator=True,
            session_listing="/v1/agents?run_id={run_id}",
        ),
        GatewayPreset(
            name="hermes",
            agent_classes=(CHAT, "agents.gateways.hermes_runs:HermesRunsAgent"),
            health_path="/health",
            summary="Hermes Agent API server: chat completions and /v1/runs",
            defaults={
                "session_header": "X-Hermes-Session-Id",
                "api_key_env": "API_SERVER_KEY",
                "model": "hermes-agent",
            },
            sessions=session_steps.HERMES,
            stored_history=True,  # X-Hermes-Session-Id: the history from its state.db
        ),
        GatewayPreset(
            name="openclaw",
            agent_classes=(
                "agents.gateways.openclaw:OpenClawChatAgent",
                "agents.gateways.openclaw:OpenClawResponsesAgent",
            ),
            health_path="/readyz",  # /health answers while plugins still load; /readyz once it admits work
            summary="OpenClaw gateway: chat completions and /v1/responses; sessions deleted over its RPC",
            defaults={
                "session_header": "x-openclaw-session-key",
                "api_key_env": "OPENCLAW_GATEWAY_TOKEN",
                "model": "openclaw",
            },
            sessions=session_steps.OPENCLAW,
            session_client="agents.capacity.gateway_clients:OpenClawSessionClient",  # closes over the RPC
            lowercases_keys=True,
        ),
        GatewayPreset(
            name="litellm",
            agent_classes=(CHAT,),
            health_path="/health/liveliness",
            summary="LiteLLM proxy (cost per request in x-litellm-response-cost)",
            defaults={"session_header": "user", "api_key_env": "LITELLM_MASTER_KEY"},
            no_sessions="LiteLLM proxy is a stateless proxy: no agent session to open and hold idle",
        ),
        GatewayPreset(
            name="langgraph",
            agent_classes=("agents.gateways.langgraph:LangGraphAgent",),
            health_path="/ok",
            summary="LangGraph server: threads and runs",
            queue=QueueProbe("/metrics?format=json", "queue.n_pending", "queue.n_running"),
            defaults={"api_key_env": "LANGGRAPH_API_KEY"},
            sessions=session_steps.LANGGRAPH,
            session_client="agents.capacity.gateway_clients:LangGraphSessionClient",  # finds the assistant
        ),
        GatewayPreset(
            name="a2a",
            agent_classes=("agents.gateways.a2a:A2AAgent",),
            health_path="/.well-known/agent-card.json",
            summary="an A2A agent over JSON-RPC (protocol 1.0, falling back to 0.3)",
            defaults={"api_key_env": "A2A_API_KEY"},
            sessions=session_steps.A2A,
        ),
        GatewayPreset(
            name="hermes-kanban",
            agent_classes=("agents.gateways.hermes_kanban:HermesKanbanAgent",),
            health_path="/health",
            summary="Hermes Kanban board via the `hermes kanban` CLI; --host is the board-stats sidecar",
            queue=QueueProbe("/stats", "queue_length", "in_progress", age_field="age_s"),
            no_sessions="Hermes Kanban is a task board: tasks, not idle sessions (use --gateway hermes)",
            match_env="HERMES_HOME",  # the board's gateway and its workers carry the kit's HERMES_HOME
        ),
        GatewayPreset(
            name="mcp",
            agent_classes=("agents.mcp.agent:McpAgent",),
            health_path="",  # MCP defines none: liveness speaks MCP itself (kit/liveness.py)
            summary="an MCP server or gateway, over Streamable HTTP (--mcp-url) or stdio (--mcp-command)",
            sessions=session_steps.MCP,
            session_client="agents.capacity.mcp_sessions:McpSessionClient",  # speaks MCP, not templates
            # a server process each
            stdio_session_client="agents.capacity.mcp_sessions:McpStdioSessionClient",
            embedded_simulator=True,
            calls_mcp=True,
            stdio_command=lambda settings: settings.mcp_command,
            stdio_flag="--mcp-command",
        ),
        GatewayPreset(
            name="acp",
            agent_classes=("agents.gateways.acp:AcpAgent",),
            health_path="",
            summary="an ACP agent over stdio: one process per simulated agent (--acp-command)",
            sessions=session_steps.ACP,
            stdio_session_client="agents.capacity.idle_sessions:AcpSessionClient",
            stdio_agents=True,
            stdio_command=lambda settings: settings.acp_command,
            stdio_flag="--acp-command",
        ),
    )
}
SPEC_PREFIX = "spec:"


def preset(name: str) -> GatewayPreset:
    """The preset called `name`, or `spec:FILE` for a REST gateway described by a spec file."""
    if name.startswith(SPEC_PREFIX):
        return spec_preset(name.removeprefix(SPEC_PREFIX))
    try:
        return PRESETS[name]
    except KeyError:
        known = ", ".join([*PRESETS, "spec:FILE"])
        raise GatewayError(f"unknown gateway {name!r}; known: {known}") from None


def key_warning(api_key_env: str | None, environ: Mapping[str, str]) -> str | None:
    """One line when the key variable (the preset's, or --api-key-env) is unset or empty: every call then
    goes without a bearer key. Names the variable, never reads out a value."""
    if not api_key_env or environ.get(api_key_env):
        return None
    return (
        f"{api_key_env} is not set: calls go without a bearer key (a gateway that needs one answers every "
        f"call with 401, or 500 for LiteLLM); export {api_key_env} or pass --api-key-env NAME"
    )


def spec_preset(path: str) -> GatewayPreset:
    if not path:
        raise GatewayError("--gateway spec:FILE needs a file name after 'spec:'")
    try:
        spec = load_spec(str(Path(path)))
    except SpecError as exc:
        raise GatewayError(str(exc)) from None
    return GatewayPreset(
        name=f"spec:{path}",
        agent_classes=("agents.gateways.spec:SpecAgent",),
        health_path="",
        summary=f"REST gateway described by {path} ({spec.name})",
        defaults={"spec_file": str(path)},
        sessions=spec.capacity,
        no_sessions=f"spec {path} has no [capacity] section (docs/capacity.md shows one)",
    )


def session_protocol(chosen: GatewayPreset, acp_sessions: str = "process") -> SessionSteps | AcpSessions:
    """The capacity/churn protocol of a preset (ACP: per process or shared); GatewayError saying why not."""
    if chosen.sessions is None:
        reason = chosen.no_sessions or f"gateway {chosen.name} has no idle-session protocol"
        raise GatewayError(f"capacity/churn: {reason}")
    if isinstance(chosen.sessions, AcpSessions) and acp_sessions == "shared":
        return session_steps.ACP_SHARED
    return chosen.sessions


def closable_sessions(chosen: GatewayPreset) -> SessionSteps:
    """The preset's session steps, for closing a run's sessions after it (kit.cleanup); GatewayError when
    there are none to close from outside: ACP sessions live in the agent processes the run launched."""
    protocol = session_protocol(chosen)
    if isinstance(protocol, AcpSessions):
        raise GatewayError(
            "ACP sessions live in agent processes the run launched and stopped: nothing to close"
        )
    return protocol


def stdio_command(chosen: GatewayPreset, settings: AgentSettings) -> str | None:
    """The command each simulated agent launches and speaks to over its stdio, when it does (then there
    is no URL to load); None otherwise."""
    return chosen.stdio_command(settings) if chosen.stdio_command else None


def stdio_session_client(
    chosen: GatewayPreset, settings: AgentSettings
) -> Callable[..., LaunchingClient] | None:
    """The client of capacity/churn sessions in processes the run launches, when this run's agents speak
    over stdio (always, or `stdio_command` given); None otherwise (sessions on an HTTP endpoint)."""
    if not (chosen.stdio_session_client and (chosen.stdio_agents or stdio_command(chosen, settings))):
        return None
    return resolve_class(chosen.stdio_session_client)


def session_client(chosen: GatewayPreset) -> type[RestSessionClient]:
    """The client class speaking the preset's SessionSteps (capacity, churn and kit.cleanup use it)."""
    return resolve_class(chosen.session_client)


def agent_classes(chosen: GatewayPreset) -> list[type]:
    """Import the preset's agent classes (the locustfile hands them to Locust as its user classes)."""
    return [resolve_class(dotted) for dotted in chosen.agent_classes]


def resolve_class(dotted: str) -> type:
    """A class named "module:Class" (presets name their agents this way, profiles their driver)."""
    module_name, class_name = dotted.split(":")
    return getattr(importlib.import_module(module_name), class_name)
