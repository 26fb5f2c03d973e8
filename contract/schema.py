"""The run-directory contract: file names, column names and units, written once, read everywhere.

Writers (sampler, agents, locustfile) and readers (analysis) import from here; nothing else names a
column. Bytes and milliseconds in files; UTC epoch seconds (float) for timestamps; an empty cell means
"not measured", never zero.
"""

from __future__ import annotations

RUN_JSON = "run.json"
SAMPLES_CSV = "samples.csv"
REQUESTS_CSV = "requests.csv"
TASKS_CSV = "tasks.csv"
AGENTS_CSV = "agents.csv"
CAPACITY_CSV = "capacity.csv"
PROCESSES_CSV = "processes.csv"
USERS_CSV = "users.csv"
LOCUST_CSV_PREFIX = "locust"  # locust_stats.csv, locust_failures.csv, locust_exceptions.csv
LOCUST_HTML = "locust_report.html"
REPORT_MD = "report.md"
REPORT_HTML = "report.html"
SUMMARY_JSON = "summary.json"  # the headline figures, machine-readable (analysis/summary_json.py)

# One row per sampler reading (sampler/). Memory in bytes, CPU in percent of one core (a process) or of
# the whole host (host_cpu_pct, 0-100).
SAMPLE_COLUMNS: tuple[str, ...] = (
    "ts",  # UTC epoch seconds of the reading
    "elapsed_s",  # seconds since the sampler started
    "target_alive",  # 1 while the target exists, 0 on the row that records its death
    "target_procs",  # processes in the target (tree, pattern match or cgroup)
    "target_rss_bytes",  # summed RSS over the target's processes
    "target_pss_bytes",  # summed PSS (sampled every Nth reading; empty otherwise)
    "target_uss_bytes",  # summed USS (same cadence as PSS)
    "target_cpu_pct",  # CPU time delta / wall delta * 100, exited children included
    "cgroup_memory_bytes",  # cgroup v2 memory.current or v1 memory.usage_in_bytes
    "cgroup_peak_bytes",  # v2 memory.peak or v1 memory.max_usage_in_bytes
    "cgroup_anon_bytes",  # memory.stat anon (v2) / rss (v1)
    "cgroup_file_bytes",  # memory.stat file (v2) / cache (v1)
    "host_available_bytes",  # MemAvailable
    "host_swap_used_bytes",
    "host_cpu_pct",  # whole host, 0-100
    "load1",  # 1-minute load average
    "queue_length",  # from the gateway's JSON endpoint
    "in_progress",  # from the gateway's JSON endpoint
    "queue_age_s",  # how old those two figures were when read (a cached source, e.g. the Kanban sidecar)
    "sidecar_rss_bytes",  # processes measured apart from the target (e.g. a database)
    "loadgen_rss_bytes",  # the Locust process the sampler serves
    "loadgen_cpu_pct",  # that process's own CPU (not its children's): the saturation check reads this
    "loadgen_children_cpu_pct",  # helper processes it ran and reaped (e.g. `hermes kanban` CLI calls)
    "event",  # empty, or what happened at this reading (target_exited, probe_error: ...)
    "host",  # the machine the reading was taken on (the sampler's --host-label, default its hostname)
)

# One row per request/operation an agent made (agents/).
REQUEST_COLUMNS: tuple[str, ...] = (
    "ts",  # UTC epoch seconds when the request was sent
    "agent_id",  # the simulated agent (Locust user) that made it
    "operation",  # chat.stream, chat, task.submit, task.poll, session.create, ...
    "ok",  # 1 or 0
    "status_code",  # HTTP status, empty when no response arrived
    # http_5xx, http_4xx, http_3xx, backpressure, timeout, connection, protocol, too_large, interrupted
    "error_kind",
    "error",  # one-line message
    "latency_ms",  # send to last byte
    "ttft_ms",  # send to first content token (streams only)
    "itl_ms_mean",  # mean inter-token latency (streams only)
    "itl_ms_max",
    "chunks",  # content chunks received (streams only)
    "tokens_in",  # prompt/input tokens as the gateway reported them (cached included)
    "tokens_cached",  # cache-read input tokens
    "tokens_cache_write",  # cache-creation input tokens (Anthropic)
    "tokens_out",  # completion/output tokens
    "tokens_reasoning",  # reasoning tokens, part of tokens_out
    "model",
    "gateway_cost_usd",  # cost the gateway itself reported (LiteLLM header, usage.cost)
    "retry_after_s",  # Retry-After on a 429
    "session_id",
    "request_id",
    "task_id",
    # open model: the first request of each arrival, sent minus due (ms); empty for every other request
    "start_lateness_ms",
    "asked_tokens_in",  # input tokens the workload asked for (empty: no size asked, e.g. a fixed prompt)
    "asked_tokens_out",  # max_tokens sent (a ceiling: the model may stop sooner)
    "step",  # agent loop: the call's step in its task (1-based; the task is task_id); empty outside a loop
    "tool_calls",  # tool calls in the response (chat and Responses agents; 0: an answer)
    "first_token_kind",  # what ttft_ms was timed to: content or tool_call (streams only)
)

# Lifecycle of agent sessions (idle agents, capacity, churn).
AGENT_COLUMNS: tuple[str, ...] = (
    "ts",  # UTC epoch seconds of the event
    "agent_id",
    "n",  # ordinal of the session in this run (1-based), for capacity
    "session_id",
    "event",  # created, failed, closed
    "ready_ms",  # create request to ready
    "error",
)

# One row per task, written when it reaches a terminal state or the run ends (agents/).
TASK_COLUMNS: tuple[str, ...] = (
    "task_id",
    "agent_id",
    "round",  # rounds profile: the round it was submitted in (empty otherwise)
    "submitted_ts",
    "started_ts",  # when a worker picked it up (gateway's timestamp when it reports one, see times_from)
    "finished_ts",  # (gateway's timestamp when it reports one, see times_from)
    "status",  # done, failed, cancelled, timeout, unfinished
    "queue_wait_ms",  # started - submitted
    "run_ms",  # finished - started
    "total_ms",  # finished - submitted (ready -> done)
    "polls",
    "times_from",  # gateway: started/finished are the gateway's own timestamps; client: our clock
    "polled_run_ms",  # run time as the client saw it (first poll seen running to first seen terminal)
    "poll_interval_ms",  # the client's poll interval: polled times are late by up to this (empty: a stream)
    "llm_calls",
    "tokens_in",
    "tokens_cached",
    "tokens_out",
    "model",
    "gateway_cost_usd",
    "worker_pid",
    "error",
    "steps",  # agent loop: model calls the task made (empty for other tasks)
    "tool_calls",  # agent loop: tool calls over its steps
    "end_reason",  # agent loop: answer, max_steps or error (empty: unfinished)
    "tool_ms",  # agent loop: time spent running tools (waits between model calls)
)

# One row per target-memory reading of the capacity and churn profiles (agents/capacity.py), written by
# the profile itself (not the recorder). Memory is the median of 3 readings taken right after the step.
CAPACITY_COLUMNS: tuple[str, ...] = (
    "ts",  # UTC epoch seconds of the reading
    "n",  # sessions open at the reading (capacity: the agent count N; 0 = baseline)
    "closed",  # sessions closed so far (churn; 0 for capacity)
    "event",  # baseline, ready (capacity agent N up), failed, opened/closed (churn batch), stop
    "session_id",  # the session this step created (capacity)
    "ready_ms",  # create request to ready (capacity)
    "rss_bytes",  # target RSS summed over its processes, median of 3 readings
    "pss_bytes",  # summed PSS (when read: --capacity-metric pss, or at baseline and stop)
    "uss_bytes",  # summed USS (same cadence as PSS)
    "procs",  # processes in the target
    "sidecar_rss_bytes",  # processes measured apart from the target (never counted in it)
    "budget_bytes",  # the memory budget the run stops at
    "metric",  # rss or pss: the memory the capacity is judged on
    "connection",  # how start-up was timed: fresh (a new TCP connection per request) or keep-alive
    "detail",  # failure message, or the stop reason on the stop row
    "startup_clock",  # where start-up was timed: thread (a dedicated OS thread, its own client) or loop
)
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
STOP_INTERRUPTED = "interrupted"  # the run was stopped from outside (a signal): no capacity value

# The load generator's side of the time axis: one row per profile tick (about once a second).
USER_COLUMNS: tuple[str, ...] = (
    "ts",
    "users",  # simulated agents (Locust users) running
    "target_users",  # what the profile asked for
    "phase",  # the profile's phase name (ramp-up, plateau, spike, round-2, ...)
    "arrivals_issued",  # open model: arrivals handed to agents so far (empty in a closed model)
    "arrivals_dropped",  # open model: arrivals dropped so far (no agent was free within 1 s)
)

# One row per process the sampler counted, the first time it counted it (sampler/process_log.py): what
# the target's and sidecars' figures in samples.csv are made of.
PROCESS_COLUMNS: tuple[str, ...] = (
    "ts",  # UTC epoch seconds when it was first counted
    "role",  # target or sidecar
    "pid",
    "ppid",
    "command",  # its command line (first 300 characters)
)

FILES_COLUMNS: dict[str, tuple[str, ...]] = {
    SAMPLES_CSV: SAMPLE_COLUMNS,
    REQUESTS_CSV: REQUEST_COLUMNS,
    AGENTS_CSV: AGENT_COLUMNS,
    TASKS_CSV: TASK_COLUMNS,
    USERS_CSV: USER_COLUMNS,
}

MIB = 1024 * 1024
GIB = 1024 * MIB
WARNING_AVAILABLE_BYTES = GIB  # host available memory below this is a warning (report, live charts)
