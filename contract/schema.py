"""The run-directory contract: file names, column names, event names and units, written once, read
everywhere.

Writers (sampler, agents, kit) and readers (analysis, the live judge) import from here; nothing else
spells a column or event name (tests/test_layers.py checks). A file's columns are the fields of one
frozen record whose every value is its own name: `SAMPLE.target_rss_bytes` is "target_rss_bytes", and
`SAMPLE_COLUMNS` their order. Bytes and milliseconds in files; UTC epoch seconds (float) for timestamps;
an empty cell means "not measured", never zero.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields
from typing import TypeVar

_T = TypeVar("_T")


def _named(cls: type[_T]) -> _T:
    """The record whose every field holds its own name (each name is written once: as the field)."""
    return cls(**{f.name: f.name for f in fields(cls)})  # type: ignore[arg-type]


RUN_JSON = "run.json"
SAMPLES_CSV = "samples.csv"
REQUESTS_CSV = "requests.csv"
TASKS_CSV = "tasks.csv"
AGENTS_CSV = "agents.csv"
CAPACITY_CSV = "capacity.csv"
PROCESSES_CSV = "processes.csv"
PROCESS_READINGS_CSV = "process_readings.csv"  # each target process's RSS at each reading (per-worker memory)
USERS_CSV = "users.csv"
MODEL_CALLS_CSV = "model_calls.csv"  # every call the model answered, read at the model (kit/model_calls.py)
LOCUST_CSV_PREFIX = "locust"  # locust_stats.csv, locust_failures.csv, locust_exceptions.csv
LOCUST_HTML = "locust_report.html"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
LOOP_LAG_CSV = (
    "loop_lag.csv"  # the load generator's event loop: how late a fixed sleep woke (kit/loop_lag.py)
)
SUMMARY_JSON = "summary.json"  # the headline figures, machine-readable (analysis/summary_json.py)


# One row per sampler reading (sampler/). Memory in bytes, CPU in percent of one core (a process) or of
# the whole host (host_cpu_pct, 0-100).
@dataclass(frozen=True)
class SampleColumns:
    ts: str  # UTC epoch seconds of the reading
    elapsed_s: str  # seconds since the sampler started
    target_alive: str  # 1 while the target exists, 0 on the row that records its death
    target_procs: str  # processes in the target (tree, pattern match or cgroup)
    target_rss_bytes: str  # summed RSS over the target's processes
    target_pss_bytes: str  # summed PSS (sampled every Nth reading; empty otherwise)
    target_uss_bytes: str  # summed USS (same cadence as PSS)
    target_cpu_pct: str  # CPU time delta / wall delta * 100, exited children included
    cgroup_memory_bytes: str  # cgroup v2 memory.current or v1 memory.usage_in_bytes
    cgroup_peak_bytes: str  # v2 memory.peak or v1 memory.max_usage_in_bytes
    cgroup_anon_bytes: str  # memory.stat anon (v2) / rss (v1)
    cgroup_file_bytes: str  # memory.stat file (v2) / cache (v1)
    host_available_bytes: str  # MemAvailable
    host_swap_used_bytes: str
    host_cpu_pct: str  # whole host, 0-100
    load1: str  # 1-minute load average
    # runnable tasks now (/proc/stat procs_running, the sampler itself left out) per logical CPU: above 1,
    # some process waits for a core (validity's run-queue rule reads this)
    host_run_queue_per_core: str
    queue_length: str  # from the gateway's JSON endpoint
    in_progress: str  # from the gateway's JSON endpoint
    queue_age_s: str  # how old those two figures were when read (a cached source, e.g. the Kanban sidecar)
    sidecar_rss_bytes: str  # processes measured apart from the target (e.g. a database)
    loadgen_rss_bytes: str  # the Locust process the sampler serves
    loadgen_cpu_pct: str  # that process's own CPU (not its children's): the saturation check reads this
    loadgen_children_cpu_pct: str  # helper processes it ran and reaped (e.g. `hermes kanban` CLI calls)
    event: str  # empty, or what happened at this reading (target_exited, probe_error: ...)
    host: str  # the machine the reading was taken on (the sampler's --host-label, default its hostname)


SAMPLE = _named(SampleColumns)
SAMPLE_COLUMNS: tuple[str, ...] = astuple(SAMPLE)


# One row per request/operation an agent made (agents/).
@dataclass(frozen=True)
class RequestColumns:
    ts: str  # UTC epoch seconds when the request was sent
    agent_id: str  # the simulated agent (Locust user) that made it
    operation: str  # chat.stream, chat, task.submit, task.poll, session.create, ...
    ok: str  # 1 or 0
    status_code: str  # HTTP status, empty when no response arrived
    # http_5xx, http_4xx, http_3xx, backpressure, timeout, connection, protocol, too_large, interrupted,
    # rpc_error, tool_error (MCP)
    error_kind: str
    error: str  # one-line message
    latency_ms: str  # send to last byte
    ttft_ms: str  # send to first content token (streams only)
    itl_ms_mean: str  # mean inter-token latency (streams only)
    itl_ms_max: str
    chunks: str  # content chunks received (streams only)
    tokens_in: str  # prompt/input tokens as the gateway reported them (cached included)
    tokens_cached: str  # cache-read input tokens
    tokens_cache_write: str  # cache-creation input tokens (Anthropic)
    tokens_out: str  # completion/output tokens
    tokens_reasoning: str  # reasoning tokens, part of tokens_out
    model: str
    gateway_cost_usd: str  # cost the gateway itself reported (LiteLLM header, usage.cost)
    retry_after_s: str  # Retry-After on a 429
    session_id: str
    request_id: str
    task_id: str
    # open model: the first request of each arrival, sent minus due (ms); empty for every other request
    start_lateness_ms: str
    asked_tokens_in: str  # input tokens the workload asked for (empty: no size asked, e.g. a fixed prompt)
    asked_tokens_out: str  # max_tokens sent (a ceiling: the model may stop sooner)
    step: str  # agent loop: the call's step in its task (1-based; the task is task_id); empty outside a loop
    tool_calls: str  # tool calls in the response (chat and Responses agents; 0: an answer)
    first_token_kind: str  # what ttft_ms was timed to: content or tool_call (streams only)
    tool_name: str  # mcp.tools_call: the tool called (empty for other operations)
    response_bytes: str  # MCP: bytes of the answer as received (JSON-RPC messages, SSE framing included)
    rpc_error_code: str  # MCP: the JSON-RPC error code of an error answer (empty: none)
    content_tokens: str  # content tokens the client received: one a content chunk (streams only)
    content_span_ms: str  # first to last received content token (streams only): TPOT's numerator
    parent_task_id: str  # agent loop: a sub-agent's call carries its parent's task (task_id is its own)
    # --sessions replay: sent minus due (the previous answer's end plus the recorded think time, scaled by
    # --sessions-speed), ms; empty on a session's first call and outside replay
    replay_late_ms: str
    recorded_latency_ms: str  # --sessions replay: the recorded call's own latency (empty: not recorded)
    recorded_tokens_out: str  # --sessions replay: the recorded call's completion tokens (empty: no usage)


REQUEST = _named(RequestColumns)
REQUEST_COLUMNS: tuple[str, ...] = astuple(REQUEST)


# Lifecycle of agent sessions (idle agents, capacity, churn).
@dataclass(frozen=True)
class AgentColumns:
    ts: str  # UTC epoch seconds of the event
    agent_id: str
    n: str  # ordinal of the session in this run (1-based), for capacity
    session_id: str
    event: str  # created, failed, closed
    ready_ms: str  # create request to ready
    error: str


AGENT = _named(AgentColumns)
AGENT_COLUMNS: tuple[str, ...] = astuple(AGENT)


# One row per task, written when it reaches a terminal state or the run ends (agents/).
@dataclass(frozen=True)
class TaskColumns:
    task_id: str
    agent_id: str
    round: str  # rounds profile: the round it was submitted in (empty otherwise)
    submitted_ts: str
    started_ts: str  # when a worker picked it up (gateway's timestamp when it reports one, see times_from)
    finished_ts: str  # (gateway's timestamp when it reports one, see times_from)
    status: str  # done, failed, cancelled, timeout, unfinished
    queue_wait_ms: str  # started - submitted
    run_ms: str  # finished - started
    total_ms: str  # finished - submitted (ready -> done)
    polls: str
    times_from: str  # gateway: started/finished are the gateway's own timestamps; client: our clock
    polled_run_ms: str  # run time as the client saw it (first poll seen running to first seen terminal)
    poll_interval_ms: str  # the client's poll interval: polled times are late by up to this (empty: a stream)
    llm_calls: str
    tokens_in: str
    tokens_cached: str
    tokens_out: str
    model: str
    gateway_cost_usd: str
    worker_pid: str
    error: str
    steps: str  # agent loop, or a gateway's loop that says so: model calls the task made (empty: unknown)
    tool_calls: str  # agent loop's tool calls, or those a gateway says it ran (empty: unknown)
    end_reason: str  # agent loop: answer, max_steps or error (empty: unfinished)
    tool_ms: str  # agent loop: time spent running tools (waits between model calls)
    parent_task_id: str  # sub-agents: the task that spawned this one (empty: a top-level task)
    children_wait_ms: str  # sub-agents: the parent's wait for its children, spawn to the last one's end
    recorded_session: str  # --sessions replay: the recorded session this task replayed
    recorded_steps: str  # --sessions replay: the calls that session recorded


TASK = _named(TaskColumns)
TASK_COLUMNS: tuple[str, ...] = astuple(TASK)


# One row per target-memory reading of the capacity and churn profiles (agents/capacity/drivers.py), written
# by
# the profile itself (not the recorder). Memory is the median of 3 readings taken right after the step.
@dataclass(frozen=True)
class CapacityColumns:
    ts: str  # UTC epoch seconds of the reading
    n: str  # sessions open at the reading (capacity: the agent count N; 0 = baseline)
    closed: str  # sessions closed so far (churn; 0 for capacity)
    event: str  # baseline, ready (capacity agent N up), failed, opened/closed (churn batch), stop
    session_id: str  # the session this step created (capacity)
    ready_ms: str  # create request to ready (capacity)
    rss_bytes: str  # target RSS summed over its processes, median of 3 readings
    pss_bytes: str  # summed PSS (when read: --capacity-metric pss, or at baseline and stop)
    uss_bytes: str  # summed USS (same cadence as PSS)
    procs: str  # processes in the target
    sidecar_rss_bytes: str  # processes measured apart from the target (never counted in it)
    budget_bytes: str  # the memory budget the run stops at
    metric: str  # rss or pss: the memory the capacity is judged on
    connection: str  # how start-up was timed: fresh (a new TCP connection per request) or keep-alive
    detail: str  # failure message, or the stop reason on the stop row
    startup_clock: str  # where start-up was timed: thread (a dedicated OS thread, its own client) or loop


CAPACITY = _named(CapacityColumns)
CAPACITY_COLUMNS: tuple[str, ...] = astuple(CAPACITY)
STARTUP_CLOCK_THREAD = "thread"  # off the load generator's event loop: its own load cannot add to it
STARTUP_CLOCK_LOOP = "loop"  # on the event loop (ACP over stdio: its pipes belong to the loop's hub)

# Values of capacity.csv's `detail` on the stop row: why the serial protocol ended.
STOP_BUDGET = "budget"  # the judged memory reached --memory-budget: a capacity value
STOP_CAP = "cap"  # --max-agents reached under the budget: no capacity value (a projection only)
STOP_FAILURE = "failure"  # an agent failed to start: recorded, no capacity value
STOP_TARGET_DIED = "target_died"
STOP_CHURN_DONE = "cycles_done"  # churn finished its cycles
# requests.csv first_token_kind: what a stream's first generated token was (its TTFT is timed to it)
FIRST_TOKEN_CONTENT = "content"
FIRST_TOKEN_TOOL_CALL = "tool_call"
# requests.csv error_kind of a request the run's own stop cut short: not the gateway's failure
ERROR_INTERRUPTED = "interrupted"
# requests.csv error_kind of an answer past --max-response-bytes or --max-sse-line-bytes (read no further)
ERROR_TOO_LARGE = "too_large"
# requests.csv operation of each MCP request (agents/mcp/agent.py); every one starts with MCP_PREFIX
MCP_PREFIX = "mcp."


@dataclass(frozen=True)
class McpOperations:
    initialize: str = "mcp.initialize"
    tools_list: str = "mcp.tools_list"
    tools_call: str = "mcp.tools_call"
    resources_list: str = "mcp.resources_list"
    resources_read: str = "mcp.resources_read"
    prompts_list: str = "mcp.prompts_list"
    prompts_get: str = "mcp.prompts_get"
    ping: str = "mcp.ping"
    close: str = "mcp.close"


MCP_OP = McpOperations()
# requests.csv error_kind of an MCP answer that is a JSON-RPC error (its code in rpc_error_code), and of a
# tools/call whose result says isError (the tool failed; the call itself was answered)
ERROR_RPC = "rpc_error"
ERROR_TOOL = "tool_error"
STOP_INTERRUPTED = "interrupted"  # the run was stopped from outside (a signal): no capacity value


@dataclass(frozen=True)
class SampleEvents:
    """samples.csv `event` (several at one reading are joined by "; "; a probe error carries its text)."""

    target_exited: str  # the target's last process is gone
    loadgen_exited: str  # the load generator the sampler serves is gone: the sampler stops
    queue_probe_error: str  # "queue_probe_error: WHY": the gateway's queue could not be read
    sampler_gap: str  # "sampler_gap: WHY": a sampler service did not answer (an empty row marks it)


@dataclass(frozen=True)
class AgentEvents:
    """agents.csv `event`: a session's lifecycle."""

    created: str
    failed: str  # its start-up failed (an id it got still exists on the gateway)
    closed: str
    close_failed: str  # closing it failed: it may still be open on the gateway


@dataclass(frozen=True)
class CapacityEvents:
    """capacity.csv `event`: the serial protocol's steps."""

    baseline: str  # before the first agent
    ready: str  # capacity: agent N is up
    failed: str  # capacity: agent N failed to start
    opened: str  # churn: a batch of sessions opened
    closed: str  # churn: a batch of sessions closed
    stop: str  # the protocol ended (`detail` says why: STOP_*)


@dataclass(frozen=True)
class TaskStatuses:
    """tasks.csv `status`."""

    done: str
    failed: str
    cancelled: str
    timeout: str
    unfinished: str  # still open when the run stopped: the run's doing, not the gateway's


@dataclass(frozen=True)
class BadToolCalls:
    """requests.csv `error_kind` of an agent-loop step whose tool calls an agent cannot run
    (agents/loop/tool_checks.py); the first of its calls' problems, in this order."""

    tool_call_no_id: str  # a call without an id (its result could not name it)
    tool_call_duplicate_id: str  # an id an earlier call of the task already had
    tool_unknown: str  # names a tool the request did not offer
    tool_args_not_json: str  # the arguments do not parse as a JSON object
    tool_args_schema: str  # the arguments miss a required field or give one of the wrong type


SAMPLE_EVENT = _named(SampleEvents)
BAD_TOOL_CALL = _named(BadToolCalls)
BAD_TOOL_CALL_KINDS: tuple[str, ...] = astuple(BAD_TOOL_CALL)
AGENT_EVENT = _named(AgentEvents)
CAPACITY_EVENT = _named(CapacityEvents)
TASK_STATUS = _named(TaskStatuses)


# The load generator's side of the time axis: one row per profile tick (about once a second).
@dataclass(frozen=True)
class UserColumns:
    ts: str
    users: str  # simulated agents (Locust users) running
    target_users: str  # what the profile asked for
    phase: str  # the profile's phase name (ramp-up, plateau, spike, round-2, ...)
    arrivals_issued: str  # open model: arrivals handed to agents so far (empty in a closed model)
    arrivals_dropped: str  # open model: arrivals dropped so far (no agent was free within 1 s)


USER = _named(UserColumns)
USER_COLUMNS: tuple[str, ...] = astuple(USER)


# One row per wake of the load generator's lag probe (kit/loop_lag.py): a greenlet that sleeps a fixed
# interval and records how much later than asked it woke; a busy or starved event loop wakes it late, and
# every time the kit takes (send, first token, last byte) is late by as much.
@dataclass(frozen=True)
class LoopLagColumns:
    ts: str  # UTC epoch seconds of the wake
    lag_ms: str  # woke this much after the sleep's end (0 when on time)


LOOP_LAG = _named(LoopLagColumns)
LOOP_LAG_INTERVAL_S = 0.1  # the probe's sleep: 10 wakes a second, ~0.8 MB of rows an hour
LOOP_LAG_COLUMNS: tuple[str, ...] = astuple(LOOP_LAG)
# Requests in flight at once in one load-generator process: past this its own TTFT error's tail grows
# (docs/benchmarks.md, "How many streams one process times well"). The kit says so at start (kit/startup.py)
# and the validity rules judge a run by it (analysis/validity.py).
STREAMS_PER_PROCESS = 150


# One row per process the sampler counted, the first time it counted it (sampler/process_log.py): what
# the target's and sidecars' figures in samples.csv are made of.
@dataclass(frozen=True)
class ProcessColumns:
    ts: str  # UTC epoch seconds when it was first counted
    role: str  # target or sidecar
    pid: str
    ppid: str
    command: str  # its command line (first 300 characters)
    why: str  # what counted it: "pid N", "in the tree of pid N", "matches 'REGEX' (tree of pid N, ...)"


PROCESS = _named(ProcessColumns)
PROCESS_COLUMNS: tuple[str, ...] = astuple(PROCESS)


# One row per target process per sampler reading (sampler/process_log.py): what per-worker memory is made
# of. A worker's tree is its process and the processes under it (ppid), summed at each reading.
@dataclass(frozen=True)
class ProcessReadingColumns:
    ts: str  # the reading's ts (samples.csv's row of the same reading)
    pid: str
    ppid: str  # its parent at this reading (a detached worker's is 1, or a subreaper's)
    rss_bytes: str


PROCESS_READING = _named(ProcessReadingColumns)
PROCESS_READING_COLUMNS: tuple[str, ...] = astuple(PROCESS_READING)


# One row per model call the model itself answered, read from the kit's simulator while it serves the run
# (the embedded one, or one a gateway uses as its model: --model-calls-url). The model's side of the truth:
# calls a gateway's own loop makes, retries and background work that no request of the kit made.
@dataclass(frozen=True)
class ModelCallColumns:
    ts: str  # UTC epoch seconds when the model answered it
    response_id: str  # the model's response id (requests.csv request_id when the kit made the call itself)
    api: str  # chat or responses
    conversation: str  # the model's name for the conversation (a hash of its first user message)
    step: str  # assistant turns before this call in its conversation
    caller: str  # the request's `user` field
    agent_id: str  # the kit's agent whose tag the conversation's first user message carries (else empty)
    tokens_in: str
    tokens_cached: str
    tokens_out: str
    tool_calls: str  # tool calls the model asked for in this answer
    cost_usd: str  # at the model's own prices (the simulator's price knobs; 0 when it has none)


MODEL_CALL = _named(ModelCallColumns)
MODEL_CALL_COLUMNS: tuple[str, ...] = astuple(MODEL_CALL)

# A session file (not a run-directory file): what `python -m kit.capture` records and `--sessions` replays
# (docs/record-replay.md). JSON Lines: a header (format, upstream, started_ts), then one line per model call
# or MCP tool call (offset_s, session, step, think_ms, api, request: the body as sent, response: the keys
# below).
SESSION_FORMAT = "loadkit-sessions/1"
SESSION_MCP_API = "mcp"  # a line's api for an MCP tools/call the agent made (capture/mcp_exchange.py)


@dataclass(frozen=True)
class SessionAnswerKeys:
    status: str  # the upstream's HTTP status
    latency_ms: str  # request forwarded to the answer's last byte, at the recorder
    ttft_ms: str  # to the first content or tool-call token (null: not a stream, or none)
    started_ts: str  # the header's: when the recording began (epoch seconds)


SESSION = _named(SessionAnswerKeys)

# The row files the run reads back whole (analysis) and the agents' rows travel in (kit/rows.py);
# then every CSV a run directory holds: capacity.csv (the capacity and churn drivers write it) and
# processes.csv (the sampler's) too.
FILES_COLUMNS: dict[str, tuple[str, ...]] = {
    SAMPLES_CSV: SAMPLE_COLUMNS,
    REQUESTS_CSV: REQUEST_COLUMNS,
    AGENTS_CSV: AGENT_COLUMNS,
    TASKS_CSV: TASK_COLUMNS,
    USERS_CSV: USER_COLUMNS,
}
RUN_CSVS: dict[str, tuple[str, ...]] = FILES_COLUMNS | {
    CAPACITY_CSV: CAPACITY_COLUMNS,
    PROCESSES_CSV: PROCESS_COLUMNS,
    PROCESS_READINGS_CSV: PROCESS_READING_COLUMNS,
    MODEL_CALLS_CSV: MODEL_CALL_COLUMNS,
    LOOP_LAG_CSV: LOOP_LAG_COLUMNS,
}

MIB = 1024 * 1024
GIB = 1024 * MIB
WARNING_AVAILABLE_BYTES = GIB  # host available memory below this is a warning (report, live charts)
CAPACITY_AT_N = 200  # --capacity-at-n's default: the agent count whose memory the capacity study reports
