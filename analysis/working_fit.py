"""The fit profile's answer from run.json "fit": how many working agents fit, at how many each limit binds
(measured where a step reached it, else extrapolated on an OLS line over the steps, marked so, with its
R²), MiB per working agent with the first agent's cost, which limit binds, and projections to other boxes.

Pure: RunData in, a FitAnswer out (analysis/fit.py's OLS); the report's section, summary.json and the
headline read the same answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from analysis.fit import Fit, ols
from analysis.model import RunData, per_run
from contract.fit_limits import AVAILABLE, BINDING_ORDER, CAP, CPU, ERRORS, MEMORY, SLO
from contract.schema import MIB
from contract.units import parse_boxes

# the step figure each limit is judged on, and whether it falls (available memory) toward the limit
LIMIT_FIGURES = {MEMORY: "rss_mib", AVAILABLE: "available_mib", CPU: "cpu_pct"}
# the unit of each limit's value, as scenarios/fit.py judges it
LIMIT_UNITS = {
    MEMORY: "MiB",
    AVAILABLE: "MiB",
    CPU: "% of the host",
    SLO: "goodput share",
    ERRORS: "failed share",
}
STEP_COLUMNS = (
    "agents",
    "steady",
    "rss_mib",
    "sidecar_rss_mib",
    "available_mib",
    "cpu_target_pct",
    "cpu_host_pct",
    "latency_p95_ms",
    "ttft_p95_ms",
    "latency_n",
    "goodput_pct",
    "requests",
    "errors",
    "breached",
)
# the per-step table's headings (0 is the idle baseline)
STEP_LABELS = {
    "rss_mib": "steady target RSS (MiB)",
    "sidecar_rss_mib": "sidecar RSS (MiB)",
    "available_mib": "host available (MiB)",
    "cpu_target_pct": "target CPU (% of one core)",
    "cpu_host_pct": "host CPU (%)",
    "latency_p95_ms": "latency p95 (ms)",
    "ttft_p95_ms": "TTFT p95 (ms)",
    "latency_n": "n (successful requests)",
    "goodput_pct": "goodput (%)",
    "breached": "limits breached",
}


@dataclass
class LimitAnswer:
    """One limit: the agents it lets fit (None: not approached), whether that was measured or
    extrapolated, the fit it came from, and its rule."""

    name: str
    agents: int | None
    how: str  # "measured", "extrapolated", "not reached", "not approached"
    fit: Fit | None
    rule: str
    limit: float | None
    unit: str

    @property
    def extrapolated(self) -> bool:
        return self.how == "extrapolated"

    def text(self) -> str:
        if self.agents is None:
            return f"{self.name}: {self.how}"
        fit = f", OLS over {self.fit.points} steps, R² {self.fit.r2:.3f}" if self.fit else ""
        return f"{self.name} at {self.agents} ({self.how}{fit})"


@dataclass
class FitAnswer:
    steps: pd.DataFrame
    fits_agents: int | None  # agents of the last step no limit bound at (None: the first step bound)
    binding: str | None  # the limit that bound first, "cap", or None (the run stopped before)
    stop_reason: str
    limits: list[LimitAnswer]
    memory_fit: Fit | None  # target RSS over the working agents (steps with agents >= 1)
    sidecar_fit: Fit | None  # the processes measured apart (--sidecar-match: an MCP server, a database)
    first_agent_mib: float | None
    baseline_mib: float | None
    projection: pd.DataFrame | None
    notes: list[str] = field(default_factory=list)

    @property
    def mib_per_agent(self) -> float | None:
        return self.memory_fit.slope if self.memory_fit else None

    @property
    def max_measured(self) -> int:
        return int(self.steps["agents"].max()) if len(self.steps) else 0

    def limit(self, name: str) -> LimitAnswer | None:
        return next((lim for lim in self.limits if lim.name == name), None)

    def sentence(self) -> str:
        """The answer in the run's unit: N working agents fit; each limit's N; the binding one."""
        if self.fits_agents is None:
            return f"Not even the first step fit: {self.stop_reason}."
        per = "; ".join(lim.text() for lim in self.limits)
        memory = (
            f" at {_mib(self.mib_per_agent)} MiB per working agent (R² {self.memory_fit.r2:.3f})"
            if self.memory_fit is not None and self.mib_per_agent is not None
            else ""
        )
        binding = {None: f"no limit bound ({self.stop_reason})", CAP: "none: the agent cap was reached first"}
        bound = binding.get(self.binding, self.binding)
        return f"{self.fits_agents} working agents fit{memory}; {per}; the binding limit is {bound}."


def _mib(value: float) -> str:
    """One decimal, or three significant digits under 1 MiB (an in-process chat's 0.0213, not 0.0)."""
    return f"{value:,.1f}" if abs(value) >= 1 else f"{value:.3g}"


def fit_record(run: RunData) -> dict | None:
    found = run.meta.get("fit")
    return found if isinstance(found, dict) and isinstance(found.get("steps"), list) else None


@per_run
def fit_answer(run: RunData) -> FitAnswer | None:
    """The fit's answer; None when the run is no fit, or scored no step."""
    record = fit_record(run)
    if record is None or not record["steps"]:
        return None
    steps = step_table(record["steps"])
    params = record.get("params") or {}
    rules = record.get("limit_rules") or {}
    working = steps[steps["agents"] >= 1]
    memory_fit = _line(working, "rss_mib")
    baseline = steps.loc[steps["agents"] == 0, "rss_mib"]
    base = float(baseline.iloc[0]) if len(baseline) and pd.notna(baseline.iloc[0]) else None
    first = memory_fit.intercept + memory_fit.slope - base if memory_fit and base is not None else None
    breached = steps[steps["breached"] != ""]
    fits = int(steps.loc[: breached.index[0] - 1, "agents"].max()) if len(breached) else steps["agents"].max()
    limits = [_limit(name, steps, _limit_value(name, record["steps"]), rule) for name, rule in rules.items()]
    answer = FitAnswer(
        steps=steps,
        fits_agents=None if pd.isna(fits) else int(fits),
        binding=record.get("binding"),
        stop_reason=str(record.get("stop_reason")),
        limits=limits,
        memory_fit=memory_fit,
        sidecar_fit=_line(working, "sidecar_rss_mib"),
        first_agent_mib=first,
        baseline_mib=base,
        projection=None,
    )
    answer.projection = projection_table(answer, steps, params)
    answer.notes = _notes(record, answer)
    return answer


def step_table(steps: list[dict]) -> pd.DataFrame:
    """One row per scored step, in the order they ran (the index is the step's number, 0 the baseline)."""
    rows = []
    for s in steps:
        limits = s.get("limits") or {}
        cpu = [v for v in (s.get("cpu_host_pct"), s.get("cpu_target_share_pct")) if v is not None]
        rows.append(
            {
                **{k: s.get(k) for k in STEP_COLUMNS},
                "cpu_pct": max(cpu) if cpu else None,
                "goodput_pct": None if s.get("goodput") is None else 100 * s["goodput"],
                "breached": ", ".join(n for n, v in limits.items() if v.get("breached")),
            }
        )
    table = pd.DataFrame(rows)
    table.index.name = "step"
    for column in table.columns.difference(["steady", "breached"]):
        table[column] = pd.to_numeric(table[column], errors="coerce")
    return table


def _limit(name: str, steps: pd.DataFrame, value: float | None, rule: str) -> LimitAnswer:
    """Measured where a step breached it (the last step before); else on the OLS line over the working
    steps, extrapolated (memory, available memory, CPU); latency and errors are not extrapolated."""
    unit = LIMIT_UNITS.get(name, "")
    hit = steps[steps["breached"].str.contains(name, regex=False)]
    column = LIMIT_FIGURES.get(name)
    working = steps[steps["agents"] >= 1]
    fit = _line(working, column) if column else None
    if len(hit):
        before = steps.loc[: hit.index[0] - 1, "agents"]
        return LimitAnswer(name, int(before.max()) if len(before) else 0, "measured", fit, rule, value, unit)
    if fit is None or value is None:
        top = int(steps["agents"].max())
        return LimitAnswer(name, None, f"not reached up to {top} agents", None, rule, value, unit)
    at = _agents_at(fit, value, falling=name == AVAILABLE)
    if at is None:
        return LimitAnswer(name, None, "not approached (its line does not reach it)", fit, rule, value, unit)
    return LimitAnswer(name, at, "extrapolated", fit, rule, value, unit)


def _line(working: pd.DataFrame, column: str) -> Fit | None:
    """OLS of a step figure over the working agents (the steps that measured it)."""
    measured = working[working[column].notna()]
    return ols(measured["agents"], measured[column])


def _limit_value(name: str, steps: list[dict]) -> float | None:
    """The limit as the steps were judged against it (the last step's verdict carries it)."""
    verdict = (steps[-1].get("limits") or {}).get(name) if steps else None
    return verdict.get("limit") if isinstance(verdict, dict) else None


def _agents_at(fit: Fit, limit: float, falling: bool = False) -> int | None:
    """The most agents the line keeps on the right side of the limit (None: it never reaches it)."""
    if (fit.slope >= 0) if falling else (fit.slope <= 0):
        return None
    at = (limit - fit.intercept) / fit.slope  # a falling figure fits down to the floor, a rising one below
    return max(0, math.floor(at) if falling else math.ceil(at) - 1)


def projection_table(answer: FitAnswer, steps: pd.DataFrame, params: dict) -> pd.DataFrame | None:
    """Agents that would fit on each --project box, by memory and by CPU, under stated assumptions."""
    boxes = params.get("project")
    if not boxes:
        return None
    rows = []
    for memory_bytes, cores in parse_boxes(boxes):
        rows.append(
            {
                "box": f"{memory_bytes / MIB / 1024:g} GiB, {cores:g} cores",
                "by memory": _by_memory(answer, memory_bytes, params),
                "by CPU": _by_cpu(steps, cores, params),
            }
        )
    table = pd.DataFrame(rows).set_index("box")
    top = answer.max_measured
    for column in ("by memory", "by CPU"):
        table[f"{column}: beyond {top} measured"] = table[column].map(
            lambda n: None if pd.isna(n) else n > top
        )
    return table


def _by_memory(answer: FitAnswer, memory_bytes: float, params: dict) -> int | None:
    """(box memory - the available floor - the gateway's fixed cost, once) / MiB per working agent."""
    fit = answer.memory_fit
    if fit is None or fit.slope <= 0:
        return None
    floor = (params.get("min_available_bytes") or 0) / MIB
    return max(0, math.floor((memory_bytes / MIB - floor - fit.intercept) / fit.slope))


def _by_cpu(steps: pd.DataFrame, cores: float, params: dict) -> int | None:
    """(cores x the CPU limit, else 100 %, - the target's CPU at 0 agents) / its CPU per working agent,
    both in % of one core as measured."""
    working = steps[steps["agents"] >= 1]
    fit = _line(working, "cpu_target_pct")
    if fit is None or fit.slope <= 0:
        return None
    share = (params.get("cpu_limit_pct") or 100.0) / 100
    return max(0, math.floor((cores * 100 * share - fit.intercept) / fit.slope))


PROJECTION_ASSUMPTIONS = (
    "projection assumptions: the box runs the target alone (the OS's own memory not counted); memory is "
    "linear in working agents at the measured MiB per agent, the gateway's fixed cost (the line at 0 "
    "agents) counted once, the --min-available floor kept; CPU per working agent as measured (% of one "
    "core) against the box's cores × --cpu-limit (100 % without one); a figure beyond the agents measured "
    "is an extrapolation and says so"
)


def _notes(record: dict, answer: FitAnswer) -> list[str]:
    notes = [answer.sentence(), f"steady rule: {record.get('steady_rule')}"]
    notes += [f"limit {name}: {rule}" for name, rule in (record.get("limit_rules") or {}).items()]
    notes.append(
        "a limit is measured at the last step before the one that breached it; one no step reached is "
        "extrapolated on the OLS line of its figure over the working steps (latency and errors are not); "
        f"several breached at one step: the binding one is named in this order: {', '.join(BINDING_ORDER)}"
    )
    if answer.memory_fit is not None:
        first = f"{answer.first_agent_mib:,.1f} MiB" if answer.first_agent_mib is not None else "not measured"
        notes.append(
            f"memory: {answer.mib_per_agent:,.2f} MiB per working agent, OLS over {answer.memory_fit.points} "
            f"steps (R² {answer.memory_fit.r2:.3f}, 95 % interval {answer.memory_fit.slope_low:,.2f}–"
            f"{answer.memory_fit.slope_high:,.2f}); first agent's cost (the line at 1 agent less the idle "
            f"baseline) {first}"
        )
    else:
        notes.append("memory per working agent: fewer than 3 working steps, no fit")
    unsteady = answer.steps[~answer.steps["steady"].astype(bool)]
    if len(unsteady):
        notes.append(
            f"{len(unsteady)} step(s) scored at their longest hold without being steady: "
            + ", ".join(f"{a:g} agents" for a in unsteady["agents"])
        )
    unscored = record.get("unscored_step")
    if isinstance(unscored, dict) and record.get("binding") is None:
        notes.append(
            f"the step at {unscored.get('agents')} agents was not scored: {unscored.get('held_why')}"
        )
    if answer.projection is not None:
        notes.append(PROJECTION_ASSUMPTIONS)
    return notes


FIT = "Fit (working agents)"  # the report section's title (analysis/headline.py names it too)
