"""What a threshold can be about: each metric's source rows, column in contract.schema, unit and aggregations.

A table, not logic: the parser validates against it and the evaluator reads rows with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from contract.derived import OUTPUT_TOKENS_PER_S, TPOT_MS
from contract.schema import REQUEST, SAMPLE, TASK

GOODPUT, TASK_GOODPUT = "goodput", "task_goodput"
DISTRIBUTION_AGGS = frozenset({"avg", "min", "max", "count", "last"})  # plus pNN, e.g. p95, p99.9


@dataclass(frozen=True)
class Metric:
    name: str
    # "request", "task", "sample" (rows), "derived" (computed from a request row: contract/derived.py),
    # "goodput" (the share of requests or tasks meeting every --slo), "counter" (a running total the
    # caller feeds) or "trend" (a verdict on a whole series the caller computes at the end of the run:
    # soak slopes and leak verdicts)
    source: str
    column: str  # its contract/schema.py column (for a rate: the column that decides failure; derived
    # and goodput metrics: their own name)
    unit: str  # "ms", "bytes", "pct", "ratio", "count": which suffixes a threshold value may carry
    rate: bool = False  # a failure fraction (error_rate): only the "rate" aggregation


_REQUEST_MS = (REQUEST.latency_ms, REQUEST.ttft_ms, REQUEST.itl_ms_mean, REQUEST.itl_ms_max)
_REQUEST_COUNTS = (REQUEST.tokens_in, REQUEST.tokens_out, REQUEST.tokens_cached)
_SAMPLE_UNITS = {
    SAMPLE.target_rss_bytes: "bytes",
    SAMPLE.target_pss_bytes: "bytes",
    SAMPLE.target_uss_bytes: "bytes",
    SAMPLE.cgroup_memory_bytes: "bytes",
    SAMPLE.host_available_bytes: "bytes",
    SAMPLE.host_swap_used_bytes: "bytes",
    SAMPLE.sidecar_rss_bytes: "bytes",
    SAMPLE.loadgen_rss_bytes: "bytes",
    SAMPLE.target_cpu_pct: "pct",
    SAMPLE.host_cpu_pct: "pct",
    SAMPLE.loadgen_cpu_pct: "pct",
    SAMPLE.loadgen_children_cpu_pct: "pct",
    SAMPLE.load1: "count",
    "queue_length": "count",
    "in_progress": "count",
    SAMPLE.target_procs: "count",
}

METRICS: dict[str, Metric] = {
    **{n: Metric(n, "request", n, "ms") for n in _REQUEST_MS},
    **{n: Metric(n, "request", n, "count") for n in _REQUEST_COUNTS},
    TPOT_MS: Metric(TPOT_MS, "derived", TPOT_MS, "ms"),
    OUTPUT_TOKENS_PER_S: Metric(OUTPUT_TOKENS_PER_S, "derived", OUTPUT_TOKENS_PER_S, "count"),
    "error_rate": Metric("error_rate", "request", "ok", "ratio", rate=True),
    # the share of scored requests (tasks) that met every --slo (scenarios/slo.py says which are scored)
    GOODPUT: Metric(GOODPUT, "goodput", GOODPUT, "ratio", rate=True),
    TASK_GOODPUT: Metric(TASK_GOODPUT, "goodput", TASK_GOODPUT, "ratio", rate=True),
    "task_total_ms": Metric("task_total_ms", "task", TASK.total_ms, "ms"),
    "task_queue_wait_ms": Metric("task_queue_wait_ms", "task", TASK.queue_wait_ms, "ms"),
    "task_run_ms": Metric("task_run_ms", "task", TASK.run_ms, "ms"),
    "task_failure_rate": Metric("task_failure_rate", "task", "status", "ratio", rate=True),
    **{n: Metric(n, "sample", n, unit) for n, unit in _SAMPLE_UNITS.items()},
    "dropped_arrivals": Metric("dropped_arrivals", "counter", "dropped_arrivals", "count"),
    # Soak trends (analysis/soak.py), judged once at the end: slopes per hour, verdicts 1 (leak/drift)
    # or 0; "not enough data" leaves them not judged.
    "target_rss_slope_mib_per_h": Metric(
        "target_rss_slope_mib_per_h", "trend", SAMPLE.target_rss_bytes, "count"
    ),
    "memory_leak": Metric("memory_leak", "trend", SAMPLE.target_rss_bytes, "count"),
    "error_rate_drift_pp_per_h": Metric("error_rate_drift_pp_per_h", "trend", "ok", "count"),
    "error_drift": Metric("error_drift", "trend", "ok", "count"),
}
TREND_METRICS = frozenset(name for name, m in METRICS.items() if m.source == "trend")
