"""Could the load generator time what it measured? Its whole situation, each part with its rule: its
processes' CPU (a Locust process uses one core), the host's CPU and run queue (a busy host delays the
load generator's wake-ups), the open model's start lateness (a late arrival's latency is timed from its
send, not its due time: coordinated omission) and its event loop's lag (every time taken waits on the
loop). A rule that fails makes the run's latency figures suspect; a saturated load-generator process makes
the run invalid (exit code 4). The kit records this verdict in run.json at the end (kit/end_checks.py);
the report, summary.json and the console show this same computation. Pure: RunData in, a record out.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass

import pandas as pd

from analysis.model import RunData, per_run
from contract.schema import LOOP_LAG, LOOP_LAG_INTERVAL_S, REQUEST, SAMPLE, STREAMS_PER_PROCESS

LOADGEN_CPU_PCT = 90.0  # p90 of any load-generator process, % of one core
HOST_CPU_PCT = 90.0  # p90 of the load generator's host, % of all cores
RUN_QUEUE_PER_CORE = 1.0  # median runnable tasks per core: above, a process waits for a core
LATENESS_MS = 100.0  # p95 of the open model's start lateness (arrivals.py's late mark)
LOOP_LAG_MS = 20.0  # p95 of the event loop's wake lateness: TTFTs of a fast gateway are tens of ms
MIN_READINGS = 5  # fewer: the rule is not judged
MIN_WORKER_READINGS = 3  # a worker reports its CPU every ~3 s
SATURATION_RULE = f"load generator CPU p90 above {LOADGEN_CPU_PCT:g} % of one core (any of its processes)"
STREAMS = "streams in flight per process"
STREAMS_RULE = (
    f"more than {STREAMS_PER_PROCESS:g} requests in flight at once in one load-generator process, on average "
    "(its summed latency over its rows' span): past that its own TTFT error's tail grows"
)
SECTION = "Load generator"  # the report's section that lists each rule
WORKERS_CPU = "workers_cpu_p90"  # run.json: each worker's CPU p90 as the kit computed it from its reports


@dataclass(frozen=True)
class Check:
    """One rule on the load generator's situation and what the run read."""

    name: str
    value: float | None  # the statistic the rule reads (None: too few readings)
    unit: str
    limit: float
    n: int  # readings it was computed from
    rule: str
    over: tuple[str, ...] = ()  # of several processes, each above the limit with its figure

    @property
    def passed(self) -> bool | None:
        return None if self.value is None else self.value <= self.limit

    def reason(self) -> str:
        which = f" ({', '.join(self.over)})" if self.over else ""
        return f"{self.name} {self.value:,.1f} {self.unit} > {self.limit:g} {self.unit}{which}"


HOST_RULES = ("host CPU p90", "host run queue median")
ADD_PROCESSES = "add processes (--processes N) or hosts"


@dataclass(frozen=True)
class Validity:
    checks: tuple[Check, ...]
    processes: dict[str, float]  # CPU p90 per load-generator process judged
    helpers_cpu_mean: float | None
    others: tuple[dict, ...] = ()  # run.json host_others: the busiest other processes over the run

    def advice(self) -> str | None:
        """What fits the cause: more processes only when the load generator's own saturated or carried more
        streams than one process times well; a busy host (its CPU or run queue over the rule while the load
        generator's was not) names the other processes that held the cores; None when no such rule failed."""
        if self.valid is False or any(c.passed is False for c in self.checks if c.name == STREAMS):
            return ADD_PROCESSES
        if any(c.passed is False for c in self.checks if c.name in HOST_RULES):
            busiest = "; ".join(
                f"pid {o.get('pid')} {o.get('command')} {o.get('cpu_pct')} %" for o in self.others
            )
            top = f": {busiest}" if busiest else " (which ones was not recorded)"
            return f"the host is busy (other processes; the busiest by CPU, % of one core{top})"
        return None

    @property
    def valid(self) -> bool | None:
        """False when a load-generator process saturated its core (exit code 4); None: not judged."""
        return self.checks[0].passed

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.passed is False]

    @property
    def suspect(self) -> bool:
        return bool(self.failed)

    def line(self) -> str | None:
        """The one line the console and the report print when the latency figures are suspect."""
        if not self.suspect:
            return None
        reasons = "; ".join(c.reason() for c in self.failed)
        return f"LATENCY SUSPECT: {reasons} (the rules: report.md, {SECTION})"

    def mark(self) -> str | None:
        """The short mark a timing figure carries beside it: RUN INVALID, LATENCY SUSPECT, or None."""
        if self.valid is False:
            return "RUN INVALID"
        return "LATENCY SUSPECT" if self.suspect else None

    def as_json(self) -> dict:
        """run.json's and summary.json's `validity` (the older keys kept: valid, rule, loadgen_cpu_p90)."""
        doc: dict[str, object] = {
            "valid": self.valid,
            "suspect": self.suspect,
            "reasons": [c.reason() for c in self.failed],
            "rule": SATURATION_RULE,
            "loadgen_cpu_p90": self.checks[0].value,
            "helpers_cpu_mean": self.helpers_cpu_mean,
            "checks": [asdict(c) | {"over": list(c.over), "passed": c.passed} for c in self.checks],
            "advice": self.advice(),
            "host_others": list(self.others),
        }
        if len(self.processes) > 1:
            doc["worst"] = max(self.processes, key=lambda k: self.processes[k])
            doc["processes"] = self.processes
        return doc


def cpu_p90(values: list[float]) -> float:
    """The CPU statistic of one process: the 90th percentile of its readings."""
    return round(statistics.quantiles(values, n=10)[-1], 1) if len(values) > 1 else round(values[0], 1)


@dataclass(frozen=True)
class Rule:
    """A rule on one statistic (`q`, a quantile) of readings the run recorded."""

    name: str
    q: float
    unit: str
    limit: float
    text: str
    readings: Callable[[RunData], list[float]]

    def check(self, run: RunData) -> Check:
        values = self.readings(run)
        value = round(float(pd.Series(values).quantile(self.q)), 2) if len(values) >= MIN_READINGS else None
        return Check(self.name, value, self.unit, self.limit, len(values), self.text)


RULES = (
    Rule(
        "host CPU p90", 0.9, "%", HOST_CPU_PCT,
        f"the load generator's host CPU p90 above {HOST_CPU_PCT:g} % of all cores",
        lambda run: _column(loadgen_samples(run), SAMPLE.host_cpu_pct),
    ),
    Rule(
        "host run queue median", 0.5, "per core", RUN_QUEUE_PER_CORE,
        f"more than {RUN_QUEUE_PER_CORE:g} runnable task per core at half the host's readings (a process "
        "waited for a core)",
        lambda run: _column(loadgen_samples(run), SAMPLE.host_run_queue_per_core),
    ),
    Rule(
        "arrival start lateness p95", 0.95, "ms", LATENESS_MS,
        f"open model: arrivals started more than {LATENESS_MS:g} ms after their due time at the 95th "
        "percentile (their latency is timed from the send, not the due time)",
        lambda run: _column(run.requests, REQUEST.start_lateness_ms) if "open_model" in run.meta else [],
    ),
    Rule(
        "event loop lag p95", 0.95, "ms", LOOP_LAG_MS,
        f"the load generator's event loop woke from a {LOOP_LAG_INTERVAL_S * 1000:g} ms sleep more than "
        f"{LOOP_LAG_MS:g} ms late at the 95th percentile (every time it takes is as late)",
        lambda run: _column(run.loop_lag, LOOP_LAG.lag_ms),
    ),
)  # fmt: skip


@per_run
def run_validity(run: RunData) -> Validity:
    """The load generator's CPU (the worst process decides), then every rule of RULES."""
    samples = loadgen_samples(run)
    local = _column(samples, SAMPLE.loadgen_cpu_pct)
    processes = _process_p90s(run, local)
    worst = max(processes.values()) if processes else None
    over = saturated(processes) if len(processes) > 1 else ()
    cpu = Check("load generator CPU p90", worst, "%", LOADGEN_CPU_PCT, len(local), SATURATION_RULE, over)
    helpers = _column(samples, SAMPLE.loadgen_children_cpu_pct)
    mean = round(statistics.fmean(helpers), 1) if helpers else None
    others = tuple(o for o in run.meta.get("host_others") or [] if isinstance(o, dict))
    checks = (cpu, *(rule.check(run) for rule in RULES), streams_check(run))
    return Validity(checks, processes, mean, others)


def streams_check(run: RunData) -> Check:
    """The most requests one load-generator process had in flight on average (Little's law: its summed
    latency over the span of the run's rows), each process above the limit named."""
    rows = run.requests
    if rows is None or rows.empty or REQUEST.latency_ms not in rows or REQUEST.agent_id not in rows:
        return Check(STREAMS, None, "streams", STREAMS_PER_PROCESS, 0, STREAMS_RULE)
    ends = rows[REQUEST.ts] + rows[REQUEST.latency_ms].fillna(0.0) / 1000.0
    seconds = float(ends.max() - rows[REQUEST.ts].min())
    streams = per_process(run)["sum"] / 1000.0 / max(seconds, 1.0)
    over = streams[streams > STREAMS_PER_PROCESS].sort_values(ascending=False)
    named = tuple(f"pid {pid} at {s:.1f}" for pid, s in over.items()) if len(streams) > 1 else ()
    worst = round(float(streams.max()), 1)
    return Check(STREAMS, worst, "streams", STREAMS_PER_PROCESS, len(rows), STREAMS_RULE, named)


@per_run
def per_process(run: RunData) -> pd.DataFrame:
    """Rows (`size`) and summed latency in ms (`sum`) per process id, the agent id's leading part (each
    agent's id starts with its Locust process's pid, agents/base.py): split once per distinct agent (a day's
    soak has a million rows and a few hundred agents), summed by numpy, not a frame per group."""
    rows = run.requests
    assert rows is not None  # callers check the rows first
    codes, agents = pd.factorize(rows[REQUEST.agent_id], use_na_sentinel=False)
    pid_of_agent = pd.Index([str(agent).split("-")[0] for agent in agents])
    frame = pd.DataFrame(
        {"pid": pid_of_agent[codes], "latency": rows[REQUEST.latency_ms].to_numpy(dtype=float, na_value=0.0)}
    )
    return frame.groupby("pid", sort=True)["latency"].agg(["size", "sum"])


def saturated(processes: dict[str, float]) -> tuple[str, ...]:
    """The processes whose own CPU p90 is above the limit, worst first, each with its figure: which one
    to relieve ("worker 2 (pid 4242) at 98.0 %"), where the fleet-wide figure says only that one did."""
    over = sorted((p for p in processes.items() if p[1] > LOADGEN_CPU_PCT), key=lambda p: -p[1])
    return tuple(f"{name} at {cpu:.1f} %" for name, cpu in over)


def loadgen_samples(run: RunData) -> pd.DataFrame | None:
    """The rows of the sampler on the load generator's host that read the load generator (a sampler
    service on a gateway host does not), while the load ran (run.json start_ts to end_ts): the kit's own
    start-up and a web UI start's settings before it are not the load's work (a 3 s run read 54 % there)."""
    s = run.samples
    if s is None or SAMPLE.loadgen_cpu_pct not in s:
        return None
    start, end = run.meta.get("start_ts"), run.meta.get("end_ts")
    during = s[SAMPLE.loadgen_cpu_pct].notna()
    if isinstance(start, int | float):
        during &= s["ts"] >= start
    if isinstance(end, int | float):
        during &= s["ts"] <= end
    return s[during]


def _process_p90s(run: RunData, local: list[float]) -> dict[str, float]:
    """CPU p90 per load-generator process with enough readings: this one (the sampler's), and each
    worker's as the kit computed it from the worker's reports (run.json)."""
    workers = run.meta.get(WORKERS_CPU)
    workers = {str(k): float(v) for k, v in (workers or {}).items() if isinstance(v, int | float)}
    name = "master" if workers else "load generator"
    return ({name: cpu_p90(local)} if len(local) >= MIN_READINGS else {}) | workers


def _column(frame: pd.DataFrame | None, column: str) -> list[float]:
    if frame is None or column not in frame:
        return []
    return [float(v) for v in frame[column].dropna()]
