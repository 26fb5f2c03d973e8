"""Human labels with units for every column name a report table, plot legend or "not measured" line can
show, keyed by the schema's and the table functions' column names. Words only: no numbers, no I/O.
"""

from __future__ import annotations

import re

from contract.schema import REQUEST, SAMPLE, TASK, USER

LABELS: dict[str, str] = {
    # samples.csv (contract/schema.py SAMPLE_COLUMNS), as plotted and listed when not measured
    SAMPLE.target_alive: "target alive",
    SAMPLE.target_procs: "target processes",
    SAMPLE.target_rss_bytes: "target RSS (MiB)",
    SAMPLE.target_pss_bytes: "target PSS (MiB)",
    SAMPLE.target_uss_bytes: "target USS (MiB)",
    SAMPLE.target_cpu_pct: "target CPU (% of one core)",
    SAMPLE.cgroup_memory_bytes: "cgroup memory (MiB)",
    SAMPLE.cgroup_peak_bytes: "cgroup peak memory (MiB)",
    SAMPLE.cgroup_anon_bytes: "cgroup anonymous memory (MiB)",
    SAMPLE.cgroup_file_bytes: "cgroup page cache (MiB)",
    SAMPLE.host_available_bytes: "host available memory (MiB)",
    SAMPLE.host_swap_used_bytes: "host swap used (MiB)",
    SAMPLE.host_cpu_pct: "host CPU (%)",
    SAMPLE.load1: "load average (1 min)",
    "queue_length": "queue length (tasks)",
    "in_progress": "tasks in progress",
    SAMPLE.sidecar_rss_bytes: "sidecar RSS (MiB)",
    SAMPLE.loadgen_rss_bytes: "load-generator RSS (MiB)",
    SAMPLE.loadgen_cpu_pct: "load-generator CPU (% of one core)",
    "users": "running agents",
    USER.target_users: "agents the profile asked for",
    # requests and tasks
    "operation": "operation",
    "requests": "requests",
    "failed": "failed",
    REQUEST.error_kind: "kind of error",
    "count": "count",
    "share_pct": "share (%)",
    "first_s": "first (s into run)",
    "last_s": "last (s into run)",
    "example": "example message",
    "status": "status",
    "tasks": "tasks",
    "itl_ms_p50": "inter-token p50 (ms)",
    "itl_ms_p95": "inter-token p95 (ms)",
    "tokens_per_s_p50": "decode p50 (tokens/s)",
    "tpot_ms_n": "TPOT n",
    "tpot_ms_p50": "TPOT p50 (ms)",
    "tpot_ms_p95": "TPOT p95 (ms)",
    "output_tokens_per_s_p50": "output tokens/s p50",
    "goodput_pct": "goodput (%)",
    # queue
    "series": "series",
    "readings": "readings",
    "time_weighted_mean": "time-weighted mean",
    "time_above_zero_s": "time above zero (s)",
    "time_above_zero_pct": "time above zero (%)",
    # rounds
    "round": "round",
    "concurrency": "tasks submitted",
    "ran_at_once": "most running at once",
    "ran_at_once_from": "running at once, from",
    "peak_target_rss_mib": "peak target RSS (MiB)",
    "min_available_mib": "min available (MiB)",
    "peak_swap_mib": "peak swap (MiB)",
    "worker_mib_mean": "per worker, mean (MiB)",
    "worker_mib_min": "per worker, min (MiB)",
    "worker_mib_max": "per worker, max (MiB)",
    "worker_mib_from": "per worker, from",
    "workers_counted": "workers counted",
    "workers_transient": "transient (not counted)",
    SAMPLE.queue_age_s: "queue reading age (s)",
    "age_p50_s": "reading age p50 (s)",
    "age_max_s": "reading age max (s)",
    "stale_readings": "stale readings",
    "items": "items",
    "succeeded": "succeeded",
    "success_pct": "success (%)",
    "of": "items are",
    "passed": "passed",
    "why": "why",
    # soak
    "measure": "measure",
    "unit": "unit",
    "points": "points",
    "duration_s": "duration (s)",
    "slope_per_h": "slope per hour",
    "slope_low_per_h": "slope, 99 % low",
    "slope_high_per_h": "slope, 99 % high",
    "mk_tau": "Mann-Kendall tau",
    "mk_p": "Mann-Kendall p",
    "detectable_per_h": "detectable slope per hour",
    "warmup_s": "warm-up left out (s)",
    "floor_per_h": "least leak per hour",
    "bar_per_h": "judged up to per hour",
    "verdict": "verdict",
    # load levels (analysis/knee.py)
    "bins": "time bins",
    "throughput_rps": "throughput (req/s)",
    "latency_p50_ms": "latency p50 (ms)",
    "latency_p95_ms": "latency p95 (ms)",
    "latency_mean_ms": "latency mean (ms)",
    "ttft_p50_ms": "TTFT p50 (ms)",
    "error_pct": "errors (%)",
    "in_flight": "requests in flight",
    REQUEST.latency_ms: "latency (ms)",
    REQUEST.ttft_ms: "TTFT (ms)",
    "little_in_flight": "in flight by Little's law",
    "busy_ratio": "in flight per agent",
    # load levels in the run's own unit (analysis/levels.py), the sweep (analysis/sweep.py)
    "ttft_p95_ms": "TTFT p95 (ms)",
    "tpot_p50_ms": "TPOT p50 (ms)",
    "tpot_p95_ms": "TPOT p95 (ms)",
    "seconds": "time held (s)",
    "achieved_per_s": "started (arrivals/s)",
    "dropped": "dropped arrivals",
    "slo_missed": "SLOs short of their attainment",
    "pass": "pass",
    "kind": "pass kind",
    "rate": "asked (arrivals/s)",
    "measured_rate": "measured (successes/s)",
    "sent_per_s": "sent (req/s)",
    "ok_per_s": "succeeded (req/s)",
    # arrivals and goodput (analysis/arrivals.py, analysis/goodput.py)
    "arrivals": "arrivals",
    "slo": "service level",
    "judged": "judged",
    "met": "met it",
    "required_pct": "required (%)",
    "held": "held",
    "per_s": "met per second",
    # thresholds (run.json)
    "expr": "rule",
    "abort": "aborts the run",
    "grace_s": "grace (s)",
    "value": "value",
    "samples": "values judged",
    "failed_ts": "first failed (epoch s)",
    # cost
    "model": "model",
    "calls": "LLM calls",
    REQUEST.tokens_in: "input tokens",
    REQUEST.tokens_cached: "cached input tokens",
    REQUEST.tokens_cache_write: "cache-write tokens",
    REQUEST.tokens_out: "output tokens",
    REQUEST.tokens_reasoning: "reasoning tokens",
    "usd_list": "at list price ($)",
    "usd_billed": "as billed ($)",
    "usd_table": "at the table's rates ($)",
    "usd_floor": "cache floor ($)",
    "usd_gateway": "gateway-reported ($)",
    "usd_computed": "computed ($)",
    "diff_pct": "difference (%)",
    "basis": "basis",
    "unpriced_tasks": "unpriced tasks",
    "usd_mean": "mean ($/task)",
    "usd_p50": "p50 ($/task)",
    "usd_p95": "p95 ($/task)",
    "usd_per_1000_tasks": "$ per 1,000 tasks",
    "item": "item",
    # session drift (analysis/drift.py)
    "turn": "turn of the session",
    "tokens_in_median": "input tokens, median",
    "from_s": "from (s into run)",
    # workload (analysis/workload.py)
    "asked_mean": "asked, mean",
    "asked_p5": "asked p5",
    "asked_p50": "asked p50",
    "asked_p95": "asked p95",
    "reported_mean": "reported, mean",
    "reported_p5": "reported p5",
    "reported_p50": "reported p50",
    "reported_p95": "reported p95",
    "input_per_output": "input per output token",
    # agent loop (analysis/agent_loop.py)
    "step": "step of the task",
    "growth_median": "growth over the step before, median",
    "tokens_cached_median": "cached input tokens, median",
    "tokens_out_median": "output tokens, median",
    "tool_calls_mean": "tool calls, mean",
    "steps_mean": "model calls, mean",
    "tasks_ended_error": "of them ended in error",
    "first_token": "first token",
    TASK.end_reason: "why it ended",
    "mean": "mean",
    # capacity projection
    "budget_gib": "budget (GiB)",
    "projected_agents": "projected agents",
    "low": "low",
    "high": "high",
}

# Columns made by analysis/stats.describe: PREFIX + n, pNN, max; milliseconds for these prefixes.
_PREFIXES = {"latency_": "latency", "ttft_": "TTFT", "lateness_": "start lateness"}
_DESCRIBED = re.compile(r"(latency_|ttft_|lateness_)(n|p\d+|max)")


def label(name: object) -> str:
    """The words for a column name; a name with no label is returned as it is (already words)."""
    text = str(name)
    if text in LABELS:
        return LABELS[text]
    if text == "n":
        return "count"
    m = _DESCRIBED.fullmatch(text)
    if m:
        stat = "count" if m.group(2) == "n" else f"{m.group(2)} (ms)"
        return f"{_PREFIXES[m.group(1)]} {stat}".strip()
    return text


def labels(names: list[str]) -> str:
    """A list of column names as words, e.g. for "not measured: ..."."""
    return ", ".join(label(n).replace(" (MiB)", "").replace(" (%)", "") for n in names)
