"""What every agent reads of the run's options, typed, frozen, with one default each.

The orchestrator (kit/settings.py) converts Locust's parsed options into an AgentSettings once and hands
it to the run's context (agents/run_context.py); agents read it there and never parse an option themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agents.wire.target_origin import HostCredentials
from scenarios.capacity import CapacityParams
from scenarios.churn import ChurnParams
from scenarios.workloads.session_file import STREAM_RECORDED, RecordedSessions
from scenarios.workloads.settings import WorkloadSettings


@dataclass(frozen=True)
class AgentSettings:
    """Each field is an option's dest (declared in agents/options.py and its sub-rooms', or the run's
    target and sampler options, kit/options.py; they take their defaults from here), or one of SET_BY_RUN."""

    run_id: str = "no-run-id"
    run_dir: Path = Path(".")
    host_auth: HostCredentials | None = None  # --host's userinfo, sent as Basic auth to that host only
    request_timeout: float = 120.0  # seconds, connect to last byte (agents/wire/reading.py), streams included
    max_response_bytes: int = 64 * 1024 * 1024  # beyond it a request is a `too_large` row, read no further
    max_sse_line_bytes: int = 1024 * 1024  # one line of an event stream (a data: line), likewise
    api_key_env: str | None = None  # the variable's name; its value is read at connect time only
    model: str = "sim-model"
    prompt: str | None = None  # None: each agent's own short prompt
    max_tokens: int = 64  # max_tokens of every call unless the workload draws an output size
    poll_interval: float = 0.5
    task_timeout: float = 600.0
    cleanup: bool = True
    session_header: str | None = None
    session_policy: str = "sticky"  # sticky, fresh or a number of turns (agents/loop/session_policy.py)
    backpressure_ok: bool = False
    chat_stream: bool = True
    responses_stream: bool = True
    runs_follow: str = "events"
    assistant_id: str | None = None  # None: the first assistant the server lists
    langgraph_input: dict[str, Any] | None = None  # the parsed JSON object of --langgraph-input
    langgraph_join: bool = False
    a2a_version: str = "auto"
    a2a_path: str = "/"
    a2a_stream: bool = False
    acp_command: str | None = None
    spec_file: str | None = None
    mcp_url: str = "/mcp"  # MCP Streamable HTTP endpoint: a path on --host, or a URL on its origin
    mcp_command: str | None = None  # MCP over stdio instead: the server each agent launches
    mcp_tool_mix: str | None = None  # NAME=WEIGHT,...; None: every tool the server lists alike
    mcp_arguments: str | None = None  # JSON file: tool -> argument objects; None: made from the schema
    mcp_protocol_version: str | None = None  # the revision initialize offers; None: the newest
    mcp_allow_unsafe_tools: bool = False  # the default mix takes unannotated, destructive, open-world tools
    mcp_close_timeout: float = 10.0  # seconds a stdio server has to exit after its stdin closes
    gateway: str = "simulator"  # the preset (or spec:FILE) whose session protocol capacity/churn speak
    capacity_connection: str = "fresh"  # capacity/churn start-up timing: fresh or keep-alive connection
    acp_sessions: str = "process"  # capacity/churn on ACP: a process per session, or one shared process
    hermes_command: str = "hermes"
    kanban_board: str | None = None
    kanban_assignee: str = "default"
    target_pid: tuple[int, ...] = ()
    target_match: tuple[str, ...] = ()
    target_cgroup: tuple[str, ...] = ()
    target_user: str | None = None  # --target-match's scope (sampler/selection.py's Scope)
    target_cwd: str | None = None
    target_env: str | None = None  # NAME=VALUE
    target_match_all: bool = False
    sidecar_pid: tuple[int, ...] = ()
    sidecar_match: tuple[str, ...] = ()
    sampler_url: tuple[str, ...] = ()  # sampler services on the gateway's host (capacity reads through one)
    sampler_token_env: str = "LOADKIT_SAMPLER_TOKEN"
    capacity: CapacityParams = field(default_factory=CapacityParams)
    churn: ChurnParams = field(default_factory=ChurnParams)
    workload: WorkloadSettings = field(default_factory=WorkloadSettings)  # what agents send (workload.py)
    sessions: RecordedSessions | None = None  # --sessions FILE, read whole and checked at start
    sessions_speed: float = 1.0
    identical_copies: bool = False
    live_tools: bool = False  # a replay's tool calls answered live by the workload's [tools]
    sessions_stream: str = STREAM_RECORDED  # a replayed call streamed as recorded, or always
    sessions_select: tuple[str, ...] = ()  # only these recorded sessions (none: all)
    sessions_skip: tuple[str, ...] = ()  # recorded sessions of these statuses left out (broken, error)


DEFAULTS = AgentSettings()
# The fields no option sets as it is given: the run's names, --host's credentials, the profile's capacity
# and churn parameters, the workload as read. kit/settings.py fills every other field from the option of
# its name, and refuses a field that is neither (or an agent option with no field) with one line.
SET_BY_RUN = frozenset({"run_id", "run_dir", "host_auth", "capacity", "churn", "workload"})
