"""The kit's command-line options, registered on Locust's own parser (so they also live in
locust.conf, LOCUST_* environment variables and, where marked, the web UI start form).

One place for option names and defaults; each room adds its own group through `add_arguments`. Each
option is one `add(...)` call (contract/cli.py): its flag, type, default, help, start-form group and
workload-file key, which the parser, the web form, the workload reader and docs/options.md all read.
"""

from __future__ import annotations

from agents.loop.session_policy import session_policy_arg
from agents.mcp.messages import MCP_REVISIONS
from agents.settings import DEFAULTS
from contract import trend_rule
from contract.cli import add, positive_duration, positive_float, positive_int, whole
from contract.schema import MIB
from kit.webui import WEB_HOST
from scenarios.workloads import options as workload_options
from scenarios.workloads.session_file import STREAM_ALWAYS, STREAM_RECORDED

# Options shown in the web UI form are text defaulting to None: Locust converts a form value to the type
# of the option's current value, so "" for a float would fail inside Locust; kit/settings.py converts
# and checks them (an empty field: the default in agents/settings.py).


def add_arguments(parser) -> None:
    """Target, sampler, run-directory and agent options (profiles, cost, capacity add their own); the
    web UI and a master's port for its workers bound to 127.0.0.1 unless --web-host/--master-bind-host
    (or LOCUST_*, locust.conf) say otherwise."""
    parser.set_defaults(web_host=WEB_HOST, master_bind_host=WEB_HOST)
    target = parser.add_argument_group("loadkit: target", "what to load and watch")
    add(
        target,
        "--gateway",
        default="simulator",
        help="gateway preset (protocol, health check, queue probe); default: simulator",
    )
    add(
        target,
        "--sim-args",
        default="",
        help='knobs for the embedded simulated gateway, e.g. "--ttft-ms 300 --max-in-progress 6"',
    )
    add(
        target,
        "--target-cmd",
        default=None,
        help="command that starts a fresh target for this run; {port} is replaced by a free port",
    )
    add(
        target,
        "--health-path",
        default=None,
        help="path answered 2xx when the target is up (default: the preset's, /health for the simulator)",
    )
    add(
        target,
        "--no-host-check",
        dest="host_check",
        action="store_false",
        default=True,
        help="do not check that --host answers before load starts (for gateways that answer late)",
    )
    add(
        target,
        "--start-timeout",
        type=positive_duration,
        default=30.0,
        help="how long to wait for a started target to become healthy, e.g. 30s, 2m (default 30s)",
    )
    add(
        target,
        "--liveness-timeout",
        type=positive_duration,
        default=10.0,
        help="how long the target's health check may fail or go unanswered mid-run before the run stops "
        "with exit code 3 (a frozen gateway); default 10s",
    )
    add(
        target,
        "--target-pid",
        type=positive_int,
        action="append",
        default=None,
        help="sample this pid and its process tree (repeatable)",
    )
    add(
        target,
        "--target-match",
        action="append",
        default=None,
        help="sample processes whose command line matches this regex (repeatable)",
    )
    add(
        target,
        "--target-cgroup",
        action="append",
        default=None,
        help="sample this cgroup directory (v1 or v2; repeatable)",
    )
    add(target, "--target-user", default=None, help="--target-match counts only this user's processes")
    add(
        target,
        "--target-cwd",
        default=None,
        help="--target-match counts only processes whose working directory is this one",
    )
    add(
        target,
        "--target-env",
        default=None,
        metavar="NAME=VALUE",
        help="--target-match counts only processes whose environment has NAME=VALUE (e.g. HERMES_HOME=...)",
    )
    add(
        target,
        "--target-match-all",
        action="store_true",
        default=False,
        help="--target-match counts every matching process tree (default: matches in more than one "
        "unrelated tree, another user's or working directory's, are refused at start)",
    )
    add(
        target,
        "--sidecar-pid",
        type=positive_int,
        action="append",
        default=None,
        help="measure this process apart from the target (repeatable)",
    )
    add(
        target,
        "--sidecar-match",
        action="append",
        default=None,
        help="measure processes matching this regex apart from the target (repeatable)",
    )

    sampler = parser.add_argument_group("loadkit: sampler", "target-host resources beside the load")
    add(
        sampler,
        "--sample-interval",
        type=positive_duration,
        default=1.0,
        help="time between sampler readings, e.g. 1s, 100ms for 10 Hz (default 1s)",
    )
    add(
        sampler,
        "--trend-min-duration",
        type=positive_duration,
        default=trend_rule.MIN_DURATION_S,
        help=f"a soak verdict (leak, drift, slope thresholds) needs >= {trend_rule.MIN_POINTS} samples "
        f"spanning this long after the first {100 * trend_rule.WARMUP_FRACTION:.0f} %% of the run "
        f"(default {trend_rule.clock(trend_rule.MIN_DURATION_S)}: at 1 s samples a run of >= "
        f"{trend_rule.clock(trend_rule.TrendData(trend_rule.MIN_DURATION_S, 1.0).shortest_run_s)}); "
        "a soak too short for it is refused",
    )
    add(
        sampler,
        "--pss-every",
        type=whole,
        default=0,
        help="read PSS/USS every Nth sample (costly; 0 = never)",
    )
    add(
        sampler,
        "--queue-url",
        default=None,
        help="JSON endpoint with the gateway's queue (default: the preset's)",
    )
    add(sampler, "--queue-field", default=None, help="dotted path of the queue length in that JSON")
    add(sampler, "--inflight-field", default=None, help="dotted path of the in-progress count in that JSON")
    add(
        sampler,
        "--model-calls-url",
        default=None,
        help="the kit's simulator serving as the gateway's model: every call it answers -> model_calls.csv",
    )
    add(
        sampler,
        "--sampler-url",
        action="append",
        default=None,
        help="URL of a sampler service on the gateway's host (`python -m sampler serve`; repeatable)",
    )
    add(
        sampler,
        "--sampler-token-env",
        default="LOADKIT_SAMPLER_TOKEN",
        help="environment variable holding the sampler service's token (never stored)",
    )

    run = parser.add_argument_group("loadkit: run directory")
    add(run, "--run-dir", default=None, help="where this run's files go (default runs/<run-id>)")
    add(
        run,
        "--run-id",
        default=None,
        help="run id tagged on everything the kit creates: letters, digits, . _ - (default: generated)",
    )
    add(
        run,
        "--reuse-run-dir",
        action="store_true",
        default=False,
        help="write into a non-empty --run-dir (refused by default: two runs' rows would mix)",
    )

    agents = parser.add_argument_group("loadkit: agents")
    add(
        agents,
        "--api-key-env",
        default=None,
        help="name of the environment variable holding the gateway's API key (never stored)",
    )
    add(
        agents,
        "--request-timeout",
        form_group="agents",
        default=None,
        help="time a request may take, connect to last byte, streams included, before it is a timeout "
        f"row, e.g. 30s (default {DEFAULTS.request_timeout:g}s)",
    )
    add(
        agents,
        "--max-response-bytes",
        default=None,
        help="largest answer body read, e.g. 64MiB; beyond it the request is a too_large row, read no "
        f"further (default {DEFAULTS.max_response_bytes // MIB} MiB)",
    )
    add(
        agents,
        "--max-sse-line-bytes",
        default=None,
        help="longest event-stream (SSE) line read, e.g. 1MiB; beyond it the request is a too_large row "
        f"(default {DEFAULTS.max_sse_line_bytes // MIB} MiB)",
    )
    add(
        agents,
        "--model",
        form_group="agents",
        default=None,
        help="model name sent to the gateway (default: the preset's)",
    )
    add(agents, "--prompt", form_group="agents", default=None, help="prompt text agents send")
    add(
        agents,
        "--max-tokens",
        form_group="agents",
        default=None,
        help=f"max_tokens asked per chat call (default {DEFAULTS.max_tokens})",
    )
    add(
        agents,
        "--poll-interval",
        form_group="agents",
        default=None,
        help=f"time between task status polls, e.g. 3s, 500ms (default {DEFAULTS.poll_interval:g}s)",
    )
    add(
        agents,
        "--task-timeout",
        form_group="agents",
        default=None,
        help=f"time a task may take before it is recorded as timeout, e.g. 15m "
        f"(default {DEFAULTS.task_timeout:g}s)",
    )
    add(
        agents,
        "--no-cleanup",
        dest="cleanup",
        action="store_false",
        default=DEFAULTS.cleanup,
        help="leave what the run created on the gateway (default: remove it; only what carries our run id)",
    )
    add(
        agents,
        "--session-header",
        default=None,
        help="session stickiness: a header name (X-Hermes-Session-Id...) or 'user' (default: the preset's)",
    )
    add(
        agents,
        "--session-policy",
        form_group="profile",
        type=session_policy_arg,
        default=DEFAULTS.session_policy,
        help="how long an agent keeps a gateway session: sticky (whole run), fresh (new per task) or N turns",
    )
    add(
        agents,
        "--backpressure-ok",
        action="store_true",
        default=DEFAULTS.backpressure_ok,
        help="count HTTP 429 as a success in Locust's stats (it stays a backpressure row in requests.csv)",
    )

    add_workload_arguments(parser)

    protocols = parser.add_argument_group("loadkit: protocols", "options of particular gateway protocols")
    add(
        protocols,
        "--no-chat-stream",
        dest="chat_stream",
        action="store_false",
        default=DEFAULTS.chat_stream,
        help="chat completions without streaming (usage and cost from the body)",
    )
    add(
        protocols,
        "--no-responses-stream",
        dest="responses_stream",
        action="store_false",
        default=DEFAULTS.responses_stream,
        help="Responses API without streaming",
    )
    add(
        protocols,
        "--runs-follow",
        choices=("events", "poll"),
        default=DEFAULTS.runs_follow,
        help="Hermes /v1/runs: follow a run by its SSE events or by polling",
    )
    add(
        protocols,
        "--assistant-id",
        default=None,
        help="LangGraph assistant (graph) id (default: the first the server lists)",
    )
    add(protocols, "--langgraph-input", default=None, help="LangGraph run input as JSON")
    add(
        protocols,
        "--langgraph-join",
        action="store_true",
        default=DEFAULTS.langgraph_join,
        help="LangGraph: wait with /join instead of polling the run",
    )
    add(
        protocols,
        "--a2a-version",
        choices=("auto", "1.0", "0.3"),
        default=DEFAULTS.a2a_version,
        help="A2A protocol version (auto: 1.0, falling back to 0.3)",
    )
    add(protocols, "--a2a-path", default=DEFAULTS.a2a_path, help="A2A JSON-RPC path")
    add(
        protocols,
        "--a2a-stream",
        action="store_true",
        default=DEFAULTS.a2a_stream,
        help="A2A: SendStreamingMessage instead of SendMessage",
    )
    add(
        protocols,
        "--acp-command",
        default=None,
        help="ACP: the agent command each simulated agent launches (JSON-RPC over its stdio)",
    )
    add(protocols, "--spec-file", default=None, help="REST gateway spec (TOML); also --gateway spec:FILE")
    add(
        protocols,
        "--mcp-url",
        default=DEFAULTS.mcp_url,
        help="MCP: the server's URL (Streamable HTTP; HTTP+SSE where it refuses the POST), a path on --host "
        "or a URL on its origin",
    )
    add(
        protocols,
        "--mcp-command",
        default=None,
        help="MCP over stdio: the server command each simulated agent launches (instead of --mcp-url)",
    )
    add(
        protocols,
        "--mcp-tool-mix",
        default=None,
        help="MCP: tools to call and their weights, NAME=WEIGHT,... (default: every listed tool alike)",
    )
    add(
        protocols,
        "--mcp-arguments",
        default=None,
        help="MCP: JSON file of tool name -> argument objects (default: made from each input schema)",
    )
    add(
        protocols,
        "--mcp-protocol-version",
        choices=MCP_REVISIONS,
        default=None,
        help="MCP: the protocol revision initialize offers (default: the newest; the server's answer kept)",
    )
    add(
        protocols,
        "--mcp-allow-unsafe-tools",
        action="store_true",
        default=DEFAULTS.mcp_allow_unsafe_tools,
        help="MCP: the default tool mix takes every listed tool, not only those annotated read-only and "
        "closed-world",
    )
    add(
        protocols,
        "--mcp-close-timeout",
        default=None,
        help="MCP over stdio: how long a server has to exit once its stdin closes, before SIGTERM, then "
        f"SIGKILL of its process group, e.g. 5s (default {DEFAULTS.mcp_close_timeout:g}s)",
    )
    add(
        protocols,
        "--hermes-command",
        default=DEFAULTS.hermes_command,
        help="Hermes Kanban: the Hermes CLI to run (`hermes kanban ...`), e.g. a venv's bin/hermes",
    )
    add(protocols, "--kanban-board", default=None, help="Hermes Kanban: board slug (default: current)")
    add(
        protocols,
        "--kanban-assignee",
        default=DEFAULTS.kanban_assignee,
        help='Hermes Kanban: profile assigned to created tasks, which the dispatcher needs ("" for none)',
    )

    cost = parser.add_argument_group("loadkit: cost")
    add(
        cost,
        "--prices",
        default=None,
        help="price table (TOML) to cost the run with (default: prices.toml shipped with the kit)",
    )
    add(
        cost,
        "--host-price",
        type=positive_float,
        default=None,
        help="$ per month of the machine under test, for $ per agent-hour and per task",
    )


def add_workload_arguments(parser) -> None:
    """What agents send (docs/workloads.md): the workload room's options (scenarios/workloads/options.py),
    then the recorded sessions replayed instead (agents/replay/recorded_agent.py)."""
    workload = workload_options.add_arguments(parser)
    add(
        workload,
        "--sessions",
        default=None,
        help="a session file (python -m kit.capture) replayed by ReplayAgent: each task one recorded session",
    )
    add(
        workload,
        "--sessions-speed",
        default=DEFAULTS.sessions_speed,
        help="replay the sessions' recorded think times this many times faster (default 1)",
    )
    add(
        workload,
        "--sessions-select",
        default=None,
        help="replay only these recorded sessions: ID[,ID] (the file's `session` names)",
    )
    add(
        workload,
        "--sessions-skip",
        default=None,
        help="leave out recorded sessions of these statuses: broken (an answer broke off), error (an "
        "HTTP or JSON-RPC error); e.g. broken,error",
    )
    add(
        workload,
        "--sessions-stream",
        choices=(STREAM_RECORDED, STREAM_ALWAYS),
        default=DEFAULTS.sessions_stream,
        help="replay each call streamed or not as recorded, with its recorded stream_options (recorded), "
        "or every call streamed with usage, for a TTFT where the recording did not stream (always)",
    )
    add(
        workload,
        "--identical-copies",
        action="store_true",
        default=DEFAULTS.identical_copies,
        help="replay every copy of a session as recorded (default: a per-copy tag in its first user message)",
    )
    add(
        workload,
        "--live-tools",
        action="store_true",
        default=DEFAULTS.live_tools,
        help="replay: answer the gateway's tool calls live with the workload's [tools] (its MCP server, else "
        "drawn tools) and send its calls and the live results in place of the recorded ones; user turns and "
        "think times as recorded. A text answer where the recording called on: its next user turn; calls "
        "it did not have: answered and sent again, up to [loop] max_steps in a row",
    )
