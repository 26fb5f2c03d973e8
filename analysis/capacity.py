"""The capacity study from capacity.csv: N_max, marginal MiB per agent with R², projections to other
budgets, and the per-run / campaign / before-after tables; a churn run's section is analysis/churn.py's.

Pure math on frames and RunData: no files, no plotting (analysis/capacity_plot.py draws).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.capacity_rows import column_value, has_rows, is_churn, memory_column
from analysis.churn import ChurnResult, churn_result, churn_section
from analysis.fit import Fit, ols
from analysis.model import RunData, Section, per_run
from analysis.stats import aggregate, describe
from contract.schema import (
    CAPACITY,
    CAPACITY_AT_N,
    CAPACITY_EVENT,
    GIB,
    MIB,
    STARTUP_CLOCK_LOOP,
    STARTUP_CLOCK_THREAD,
    STOP_BUDGET,
    STOP_CAP,
    STOP_FAILURE,
    STOP_INTERRUPTED,
)

TAIL_POINTS = 8  # the capacity study: the marginal is the OLS slope over the last 8 sampled points
MIN_R2 = 0.95  # below this the fit is "not stable" and no capacity is published
PROJECTION_GIB: tuple[float, ...] = (2.0, 4.0, 8.0)
# No stop row (crash, SIGKILL) reads as STOP_INTERRUPTED too: the run was cut short.
SHARED_PAGES = "counts shared pages once per process"
# the driver's reading at each step; the resources table's peak is the side sampler's, read between steps
PEAK_AT_STEPS = "peak at the capacity steps (MiB)"
SAMPLER_BETWEEN_STEPS = (
    "peak target RSS here is the side sampler's, read every {interval:g} s between the capacity steps; "
    f"the Capacity table's '{PEAK_AT_STEPS}' is the driver's reading at each step"
)


@dataclass
class CapacityResult:
    """One capacity run. Memory in MiB, times in ms. `n_max` is None whenever no capacity is published."""

    metric: str
    budget_mib: float | None
    stop_reason: str
    agents_ready: int
    failures: int
    n_max: int | None
    n_stop: int | None
    fit: Fit | None
    stable: bool
    first_agent_mib: float | None
    baseline_mib: float | None
    startup: dict
    peak_mib: float | None
    at_n: int
    mib_at_n: float | None
    headroom_mib: float | None
    sidecar_mib: float | None
    duplicate_session_ids: int
    notes: list[str] = field(default_factory=list)
    max_procs: int = 1
    connection: str | None = None  # how start-up was timed (fresh connection or keep-alive)
    startup_clock: str | None = None  # where: a dedicated thread or the event loop (None: older runs)
    pss_at_peak_mib: float | None = None  # PSS at the last agent reading (beside RSS when judged on RSS)

    @property
    def projects(self) -> bool:
        """Projections only from a run that reached the budget or the cap with every agent started."""
        return self.stop_reason in (STOP_BUDGET, STOP_CAP) and self.failures == 0

    @property
    def marginal_mib(self) -> float | None:
        return self.fit.slope if self.fit else None

    @property
    def r2(self) -> float | None:
        return self.fit.r2 if self.fit else None


def capacity_points(frame: pd.DataFrame, metric: str = "rss") -> pd.DataFrame:
    """Baseline and per-agent readings: columns n and mib, sorted by n (failed steps excluded)."""
    rows = frame[frame["event"].isin([CAPACITY_EVENT.baseline, CAPACITY_EVENT.ready])]
    points = pd.DataFrame({"n": pd.to_numeric(rows["n"]), "mib": memory_column(rows, metric)})
    return points.dropna().sort_values("n").reset_index(drop=True)


def stop_reason(frame: pd.DataFrame) -> str:
    """The reason on the stop row; a run without one was cut short (crash, kill, time limit)."""
    reason = column_value(frame[frame["event"] == CAPACITY_EVENT.stop], "detail")
    return str(reason) if reason is not None else STOP_INTERRUPTED


def capacity_result(
    frame: pd.DataFrame,
    budget_bytes: float | None = None,
    metric: str | None = None,
    at_n: int = CAPACITY_AT_N,
    tail: int = TAIL_POINTS,
    min_r2: float = MIN_R2,
) -> CapacityResult:
    """Every per-run figure of the study's table; budget and metric default to what the run recorded."""
    metric = metric or str(column_value(frame, "metric") or "rss")
    budget = budget_bytes if budget_bytes is not None else column_value(frame, CAPACITY.budget_bytes)
    budget_mib = float(budget) / MIB if budget is not None else None
    points = capacity_points(frame, metric)
    agents = points[points["n"] >= 1]
    ready = frame[frame["event"] == CAPACITY_EVENT.ready]
    fit = ols(agents["n"].tail(tail), agents["mib"].tail(tail))
    reason, failures = stop_reason(frame), int((frame["event"] == CAPACITY_EVENT.failed).sum())
    n_stop = _first_over(agents, budget_mib)
    stable = fit is not None and fit.r2 >= min_r2
    notes = _failure_notes(frame) + _capacity_notes(reason, failures, fit, stable, n_stop, min_r2)
    publish = reason == STOP_BUDGET and failures == 0 and stable and n_stop is not None
    n_max = n_stop - 1 if publish and n_stop is not None else None
    mib_at_max = _mib_at(points, n_max)
    ids = ready["session_id"].dropna() if "session_id" in ready else pd.Series(dtype=object)
    return CapacityResult(
        metric=metric,
        budget_mib=budget_mib,
        stop_reason=reason,
        agents_ready=len(ready),
        failures=failures,
        n_max=n_max,
        n_stop=n_stop,
        fit=fit,
        stable=stable,
        first_agent_mib=_first_agent_increment(points),
        baseline_mib=_mib_at(points, 0),
        startup=describe(pd.to_numeric(ready[CAPACITY.ready_ms]), "", (50, 95)),
        peak_mib=float(points["mib"].max()) if len(points) else None,
        at_n=at_n,
        mib_at_n=_mib_at(points, at_n),
        headroom_mib=budget_mib - mib_at_max if budget_mib is not None and mib_at_max is not None else None,
        sidecar_mib=_last_mib(frame, CAPACITY.sidecar_rss_bytes),
        duplicate_session_ids=int(len(ids) - ids.nunique()),
        notes=notes,
        max_procs=_max_procs(ready),
        pss_at_peak_mib=_last_mib(ready, CAPACITY.pss_bytes),
        connection=column_value(frame, "connection") if "connection" in frame else None,
        startup_clock=column_value(frame, CAPACITY.startup_clock)
        if CAPACITY.startup_clock in frame
        else None,
    )


def _max_procs(ready: pd.DataFrame) -> int:
    procs = pd.to_numeric(ready["procs"], errors="coerce").dropna() if "procs" in ready else ready.iloc[0:0]
    return int(procs.max()) if len(procs) else 1


def _failure_notes(frame: pd.DataFrame) -> list[str]:
    """What the gateway answered when an agent failed to start (the first failure ends a capacity run)."""
    failed = frame[frame["event"] == CAPACITY_EVENT.failed]
    return [
        f"Agent {int(row['n'])} failed to start: {row['detail']}."
        for _, row in failed.iterrows()
        if pd.notna(row["n"])
    ]


def shared_pages_warning(result: CapacityResult) -> str | None:
    """With several target processes, summed RSS counts shared pages once per process: the warning
    given when the budget is judged on RSS, with the PSS figure beside it."""
    if result.metric != "rss" or result.max_procs < 2 or result.pss_at_peak_mib is None:
        return None
    return (
        f"Warning: the target has up to {result.max_procs} processes and the budget is judged on summed RSS "
        f"({result.peak_mib:,.1f} MiB), which {SHARED_PAGES}; PSS at the same step is "
        f"{result.pss_at_peak_mib:,.1f} MiB. For process-per-agent targets judge with --capacity-metric pss."
    )


def _first_over(agents: pd.DataFrame, budget_mib: float | None) -> int | None:
    if budget_mib is None:
        return None
    over = agents[agents["mib"] >= budget_mib]
    return int(over["n"].iloc[0]) if len(over) else None


def _mib_at(points: pd.DataFrame, n: int | None) -> float | None:
    hit = points[points["n"] == n] if n is not None else points.iloc[0:0]
    return float(hit["mib"].iloc[0]) if len(hit) else None


def _first_agent_increment(points: pd.DataFrame) -> float | None:
    """RSS(1) - baseline: the first agent's one-time cost, its own share included (the study's figure)."""
    base, first = _mib_at(points, 0), _mib_at(points, 1)
    return first - base if base is not None and first is not None else None


def _last_mib(frame: pd.DataFrame, column: str) -> float | None:
    value = column_value(frame, column)
    return float(value) / MIB if value is not None else None


def _capacity_notes(
    reason: str, failures: int, fit: Fit | None, stable: bool, n_stop: int | None, min_r2: float
) -> list[str]:
    """Why a run publishes no capacity, in the user's terms."""
    notes = []
    if failures:
        notes.append(f"{failures} agent start-up failure(s): a failed run yields no capacity value.")
    if fit is None:
        notes.append("Fewer than 3 agents measured: no marginal memory fit.")
    elif not stable:
        notes.append(f"Fit not stable (R² {fit.r2:.3f} < {min_r2}): no capacity published.")
    if reason == STOP_CAP:
        notes.append("Stopped at the agent cap before the budget: capacity not reached (see projection).")
    elif reason == STOP_FAILURE:
        notes.append("The gateway refused an agent before the budget: no capacity value, no projection.")
    elif reason != STOP_BUDGET:
        notes.append(
            f"Run ended by '{reason}' before the budget was reached: no capacity value, no projection."
        )
    elif reason == STOP_BUDGET and n_stop is None:
        notes.append("Stop row says budget but no reading is over it: no capacity value.")
    return notes


def projection_table(fit: Fit | None, budgets_gib: tuple[float, ...] = PROJECTION_GIB) -> pd.DataFrame | None:
    """Agents the tail fit projects into other budgets, with the range from the slope's 95 % interval.

    A projection, never a measurement: it assumes memory keeps growing linearly past the measured range.
    """
    if fit is None or fit.slope <= 0:
        return None
    rows = []
    for gib in budgets_gib:
        budget_mib = gib * GIB / MIB
        low, high = fit.x_at(budget_mib, fit.slope_high), fit.x_at(budget_mib, fit.slope_low)
        rows.append(
            {
                "budget_gib": gib,
                "projected_agents": math.floor(fit.x_at(budget_mib)),
                "low": math.floor(low),
                "high": math.floor(high) if math.isfinite(high) else None,
            }
        )
    return pd.DataFrame(rows).set_index("budget_gib")


def result_measures(result: CapacityResult) -> dict[str, object]:
    """The per-run column of the capacity table, in the study's order (None = not measured/published)."""
    fit = result.fit
    return {
        "N_max": result.n_max,
        "N_stop": result.n_stop,
        f"marginal {result.metric.upper()} (MiB/agent)": result.marginal_mib,
        "R²": result.r2,
        "fit stable": result.stable,
        "first-agent increment (MiB)": result.first_agent_mib,
        "baseline (MiB)": result.baseline_mib,
        "start-up p50 (ms)": result.startup.get("p50"),
        "start-up p95 (ms)": result.startup.get("p95"),
        "PSS at the last agent (MiB)": result.pss_at_peak_mib,
        PEAK_AT_STEPS: result.peak_mib,
        f"at N={result.at_n} (MiB)": result.mib_at_n,
        "headroom at N_max (MiB)": result.headroom_mib,
        "sidecar RSS at end (MiB)": result.sidecar_mib,
        "agents started": result.agents_ready,
        "duplicate session ids": result.duplicate_session_ids,
        "failures": result.failures,
        "stop reason": result.stop_reason,
        "fit points": fit.points if fit else None,
    }


def run_table(results: Mapping[str, CapacityResult]) -> pd.DataFrame:
    """Measures as rows, one column per run, then median, range and CV across the runs (campaign shape)."""
    columns = {label: result_measures(r) for label, r in results.items()}
    table = pd.DataFrame(columns)
    table.index.name = "measure"
    if len(results) > 1:
        summary = [_summary(table.loc[m]) for m in table.index]
        table["median"], table["range"], table["cv %"] = zip(*summary, strict=True)
    return table


def _summary(values: pd.Series) -> tuple[object, object, object]:
    """Median, "min–max" and CV of numeric measures; text measures summarised when all runs agree."""
    numeric = pd.to_numeric(
        values.where(values.map(lambda v: not isinstance(v, (bool, str)))), errors="coerce"
    )
    if numeric.notna().any():
        agg = aggregate(numeric)
        return agg["median"], f"{_short(agg['min'])}–{_short(agg['max'])}", agg["cv_pct"]
    distinct = {str(v) for v in values if v is not None and not pd.isna(v)}
    if not distinct:
        return None, None, None  # measured in no run: shown as "—", never as a value
    return (distinct.pop() if len(distinct) == 1 else "mixed"), None, None


def _short(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:.4g}"


BEFORE_AFTER_MEASURES = (
    "N_max",
    "marginal RSS (MiB/agent)",
    "marginal PSS (MiB/agent)",
    "first-agent increment (MiB)",
    "start-up p50 (ms)",
    PEAK_AT_STEPS,
)


def before_after_table(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The capacity study's second table from two campaign run tables: median (range) before and after,
    and their ratio."""
    rows = []
    for measure in BEFORE_AFTER_MEASURES:
        if measure not in before.index and measure not in after.index:
            continue
        b, a = _cell_of(before, measure), _cell_of(after, measure)
        ratio = a[0] / b[0] if b[0] not in (None, 0) and a[0] is not None else None
        rows.append({"measure": measure, "before": b[1], "after": a[1], "after / before": ratio})
    return pd.DataFrame(rows).set_index("measure")


def _cell_of(table: pd.DataFrame, measure: str) -> tuple[float | None, str | None]:
    """(median, "median (min–max)") of one measure of a run table; a single run has no range."""
    if measure not in table.index:
        return None, None
    row = table.loc[measure]
    med = row["median"] if "median" in row else row.iloc[0]
    if med is None or pd.isna(med):
        return None, None
    rng = row.get("range")
    text = _short(float(med)) + (
        f" ({rng})" if isinstance(rng, str) and rng.split("–")[0] != rng.split("–")[-1] else ""
    )
    return float(med), text


def capacity_section(run: RunData, plot: Path | None = None) -> Section | None:
    """The report's capacity (or churn) section; None when the run has no capacity.csv.

    `plot` is the PNG analysis/capacity_plot.py drew for this run, if the caller drew one.
    """
    frame = run.capacity
    if not has_rows(frame):
        return None
    if is_churn(frame):
        return churn_section(run_churn(run))
    result = run_capacity(run)
    section = Section(title="Capacity")
    section.tables.append(("Capacity (serial protocol)", run_table({run.path.name: result})))
    proj = projection_table(result.fit) if result.projects else None
    if proj is not None:
        section.tables.append(("Projection to other budgets (from the tail fit; not measured)", proj))
    warning = shared_pages_warning(result)
    section.notes.extend(([warning] if warning else []) + result.notes + _method_notes(result))
    if plot is not None:
        section.images.append(plot)
    return section


@per_run
def run_capacity(run: RunData) -> CapacityResult:
    """The run's capacity figures (its capacity.csv has rows), at the --capacity-at-n it recorded: once
    per report, shared by its sections, summary.json and the console summary."""
    assert run.capacity is not None
    params = (run.meta.get("profile") or {}).get("params") or {}
    return capacity_result(run.capacity, at_n=int(params.get("capacity_at_n") or CAPACITY_AT_N))


@per_run
def run_churn(run: RunData) -> ChurnResult:
    """The run's churn figures (its capacity.csv has churn's rows), once per report."""
    assert run.capacity is not None
    return churn_result(run.capacity)


def connection_text(connection: str | None) -> str:
    if connection == "keep-alive":
        return "on a keep-alive connection with TCP_NODELAY (may include a delayed-ACK stall)"
    if connection == "fresh":
        return "on a fresh connection per request with TCP_NODELAY"
    return "connection mode not recorded (a run older than the column)"


def sampler_peak_note(run: RunData) -> str | None:
    """In a capacity or churn run, which peak the resources table shows (the capacity table has another)."""
    frame = run.capacity
    if frame is None or frame.empty:
        return None
    sampler = run.meta.get("sampler")
    interval = sampler.get("interval_s") if isinstance(sampler, dict) else None
    return SAMPLER_BETWEEN_STEPS.format(interval=interval if isinstance(interval, int | float) else 1.0)


def _readings_text(metric: str) -> str:
    """How each step's figure is read (sampler/memory_probe.py): RSS thrice (the median), PSS once (it is
    costly: smaps_rollup per process)."""
    return "one PSS reading" if metric == "pss" else "median of 3 RSS readings"


def clock_text(clock: str | None) -> str:
    if clock == STARTUP_CLOCK_THREAD:
        return (
            "timed on a dedicated OS thread with its own HTTP client, where the load generator's own work "
            "(its event loop, memory readings, row writes) cannot add to it"
        )
    if clock == STARTUP_CLOCK_LOOP:
        return "timed on the load generator's event loop (its own work may add to it)"
    return "timed on the load generator's event loop (a run older than the startup_clock column)"


def _method_notes(result: CapacityResult) -> list[str]:
    budget = f"{result.budget_mib:,.0f} MiB" if result.budget_mib is not None else "unknown"
    return [
        f"Capacity judged on target {result.metric.upper()} (summed over its processes, "
        f"{_readings_text(result.metric)} after each agent was ready); budget {budget}.",
        f"Marginal = OLS slope over the last {TAIL_POINTS} readings; R² < {MIN_R2} publishes no capacity.",
        "N_max = largest N still under the budget; N_stop = first N at or over it.",
        f"Start-up = first create request to ready, {connection_text(result.connection)}, "
        f"{clock_text(result.startup_clock)}; percentiles over "
        f"{result.startup.get('n', 0)} agents"
        + (f" ({result.startup['small_sample']})." if result.startup.get("small_sample") else "."),
    ]
