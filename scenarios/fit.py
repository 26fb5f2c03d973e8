"""Fit profile: working agents added in steps, each step held until its memory and latency are steady,
then scored against every limit given; the run ends at the first limit that binds, or at the cap.

FitPlan is the step machine, fed the sampler's readings and the request rows as they are written; every
method takes `now`, so it is tested without a clock. FitProfile adapts it to LoadTestShape.tick(). The
answer (agents per limit, fits, the binding limit) is the analysis's, from run.json "fit" (analysis/
working_fit.py). A step's figures and the steady rule: scenarios/fit_step.py.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from contract.cli import add
from contract.fit_limits import AVAILABLE, BINDING_ORDER, CAP, CPU, ERRORS, MEMORY, SLO
from contract.schema import MIB, REQUESTS_CSV, SAMPLES_CSV
from contract.units import parse_boxes, parse_duration, parse_size, whole_number
from scenarios.errors import ProfileConfigError
from scenarios.fit_step import STEADY_RULE, StepRows
from scenarios.shape import BASELINE, Phase, Tick
from scenarios.slo import Slo, parse_slo
from scenarios.traits import ProfileTraits

DEFAULT_STEP_EVERY_S = 10.0  # the least hold of a step (--step-every)
MAX_HOLD_FACTOR = 3.0  # the longest hold, unless --step-max-hold: this many least holds
DEFAULT_MAX_AGENTS = 200
ERROR_LIMIT = 0.05  # a step whose requests failed more than this (>= MIN_ERROR_REQUESTS of them) binds
MIN_ERROR_REQUESTS = 10
AUTO = "auto"


@dataclass(frozen=True)
class FitLimits:
    """The fit's own options, typed (None: not given). The shared ones (--step-every, --max-agents,
    --baseline, --slo) come from ProfileOptions."""

    step_agents: int | None = 1  # None: adaptive (--step-agents auto)
    max_hold_s: float | None = None
    memory_budget_bytes: float | None = None
    min_available_bytes: float | None = None
    cpu_limit_pct: float | None = None
    project: str | None = None  # "4GiB,2cores;8GiB,4cores": boxes the report projects to


@dataclass(frozen=True)
class FitParams:
    step_agents: int | None
    step_every_s: float
    max_hold_s: float
    max_agents: int
    baseline_s: float
    memory_budget_bytes: float | None
    min_available_bytes: float | None
    cpu_limit_pct: float | None
    slos: tuple[str, ...]
    project: str | None
    cores: int  # the load generator host's cores: the target's CPU as a share of the host

    @property
    def window_s(self) -> float:
        """The steady rule's window: the last half of the least hold."""
        return self.step_every_s / 2


def add_arguments(parser: Any) -> None:
    """--step-agents, --step-max-hold, --min-available, --cpu-limit, --project (the fit also reads
    --memory-budget, --step-every, --max-agents, --baseline and --slo)."""
    group = parser.add_argument_group("loadkit: fit", "how many working agents fit, and which limit binds")
    for flag, text in (
        (
            "--step-agents",
            "fit: working agents added per step, or auto (larger far from every limit, "
            "smaller near one); default 1",
        ),
        (
            "--step-max-hold",
            "fit: longest a step waits for steady memory and latency, e.g. 1m "
            f"(default {MAX_HOLD_FACTOR:g} x --step-every)",
        ),
        ("--min-available", "fit: host available memory floor, e.g. 1GiB (a step below it binds)"),
        (
            "--cpu-limit",
            "fit: CPU limit in %% of the host, e.g. 75%%: the host's CPU or the target's "
            "(as a share of the host's cores)",
        ),
        ("--project", 'fit: boxes to project the agents that fit to, e.g. "4GiB,2cores;8GiB,4cores"'),
    ):
        add(group, flag, form_group="profile", type=str, default=None, help=text)


def read_limits(options: Any) -> FitLimits:
    """The fit's options from Locust's parsed options (an empty field is not given); raises
    ProfileConfigError naming the bad one."""

    def get(dest: str) -> str | None:
        value = getattr(options, dest, None)
        return None if value in (None, "") else str(value).strip()

    return FitLimits(
        step_agents=_step_agents(get("step_agents")),
        max_hold_s=_option(get("step_max_hold"), "--step-max-hold", _positive_duration),
        memory_budget_bytes=_option(get("memory_budget"), "--memory-budget", _positive_size),
        min_available_bytes=_option(get("min_available"), "--min-available", _positive_size),
        cpu_limit_pct=_option(get("cpu_limit"), "--cpu-limit", _percent),
        project=_option(get("project"), "--project", _checked_boxes),
    )


def _option(raw: str | None, flag: str, parse: Callable[[str], Any]) -> Any:
    if raw is None:
        return None
    try:
        return parse(raw)
    except ValueError as exc:
        raise ProfileConfigError(f"{flag} {raw!r}: {exc}") from None


def _step_agents(raw: str | None) -> int | None:
    if raw is None:
        return 1
    if raw == AUTO:
        return None
    return _option(raw, "--step-agents", lambda text: whole_number(text, least=1))


def _positive_duration(text: str) -> float:
    value = parse_duration(text)
    if value <= 0:
        raise ValueError("must be longer than 0s")
    return value


def _positive_size(text: str) -> float:
    value = parse_size(text)
    if value <= 0:
        raise ValueError("must be more than 0 bytes")
    return value


def _percent(text: str) -> float:
    value = float(text.removesuffix("%"))
    if not 0 < value <= 100:
        raise ValueError("a percentage above 0 and at most 100")
    return value


def _checked_boxes(text: str) -> str:
    parse_boxes(text)
    return text


class FitPlan:
    """The current step, the steps scored so far, and which limit bound (or why the plan ended)."""

    def __init__(self, params: FitParams, slos: tuple[Slo, ...], start_ts: float) -> None:
        self.params = params
        self.slos = slos
        self.start_ts = start_ts
        first = 0 if params.baseline_s > 0 else (params.step_agents or 1)  # --baseline 0s: no idle step
        self.current = StepRows(first, start_ts, slos)
        self.steps: list[dict] = []
        self.step = params.step_agents or 1
        self.binding: str | None = None
        self.stop_reason: str | None = None
        self.held_why = ""  # what the steady rule last read of the current step

    @property
    def done(self) -> bool:
        return self.stop_reason is not None

    @property
    def agents(self) -> int:
        return self.current.agents

    def on_row(self, file_name: str, row: dict) -> None:
        """A recorder (requests.csv) or sampler (samples.csv) row: the current step's."""
        if file_name == SAMPLES_CSV:
            self.current.observe_sample(row)
        elif file_name == REQUESTS_CSV:
            self.current.observe_request(row)

    def advance(self, now: float) -> None:
        """Score the current step once it has held its least hold and is steady (or at its longest
        hold); then stop at a binding limit or the cap, or open the next step."""
        if self.done:
            return
        held = now - self.current.start_ts
        least = self.params.baseline_s if self.current.agents == 0 else self.params.step_every_s
        if held < least:
            return
        steady = self.current.steadiness(now, self.params.window_s)
        self.held_why = steady.why
        if not steady.steady and held < max(least, self.params.max_hold_s):
            return
        figures = self.current.score(now, self.params.window_s, steady, self.params.cores)
        figures["limits"] = judge_limits(figures, self.params, self.slos)
        self.steps.append(figures)
        breached = [name for name in BINDING_ORDER if figures["limits"].get(name, {}).get("breached")]
        if breached:
            self.binding = breached[0]
            self.stop_reason = f"{breached[0]} limit reached at {self.agents} agents"
        elif self.agents >= self.params.max_agents:
            self.binding = CAP
            self.stop_reason = f"agent cap reached ({self.params.max_agents}) with no limit binding"
        else:
            self.step = self._next_step()
            self.current = StepRows(min(self.params.max_agents, self.agents + self.step), now, self.slos)

    def stop(self, now: float) -> None:
        """The run ended before the plan did: the step in progress is left unscored, and said so."""
        if not self.done:
            self.stop_reason = f"run stopped at {self.agents} agents, before its step was scored"

    def record(self) -> dict:
        """run.json "fit": the parameters, the rules, every scored step and how the plan ended."""
        return {
            "params": asdict(self.params),
            "steady_rule": STEADY_RULE,
            "limit_rules": limit_rules(self.params, self.slos),
            "steps": self.steps,
            "binding": self.binding,
            "stop_reason": self.stop_reason,
            "unscored_step": None
            if self.binding
            else {"agents": self.agents, "start_ts": self.current.start_ts, "held_why": self.held_why},
        }

    def _next_step(self) -> int:
        """A fixed --step-agents, or auto: double the step while far from every limit, and never more
        than half the agents a limit is projected to be away (the last two steps' slope)."""
        if self.params.step_agents is not None:
            return self.params.step_agents
        away = agents_to_nearest_limit(self.steps, self.params)
        grown = 2 * self.step if self.agents > 0 else 1
        return max(1, grown if away is None else min(grown, math.floor(away / 2)))


def judge_limits(figures: dict, params: FitParams, slos: tuple[Slo, ...]) -> dict[str, dict]:
    """Each limit given: its value at the step and whether the step breached it (None: not judged)."""
    found: dict[str, dict] = {}
    if params.memory_budget_bytes is not None:
        found[MEMORY] = _verdict(
            figures["rss_mib"], params.memory_budget_bytes / MIB, lambda v, lim: v >= lim
        )
    if params.min_available_bytes is not None:
        floor = params.min_available_bytes / MIB
        found[AVAILABLE] = _verdict(figures["available_mib"], floor, lambda v, lim: v < lim)
    if params.cpu_limit_pct is not None:
        cpu = [v for v in (figures["cpu_host_pct"], figures["cpu_target_share_pct"]) if v is not None]
        found[CPU] = _verdict(max(cpu) if cpu else None, params.cpu_limit_pct, lambda v, lim: v >= lim)
    if any(not s.of_tasks for s in slos):
        need = min(s.attainment for s in slos if not s.of_tasks)
        found[SLO] = _verdict(figures["goodput"], need, lambda v, lim: v < lim)
    rate = figures["errors"] / figures["requests"] if figures["requests"] >= MIN_ERROR_REQUESTS else None
    found[ERRORS] = _verdict(rate, ERROR_LIMIT, lambda v, lim: v > lim)
    return found


def _verdict(value: float | None, limit: float, breached: Callable[[float, float], bool]) -> dict:
    return {"value": value, "limit": limit, "breached": None if value is None else breached(value, limit)}


def limit_rules(params: FitParams, slos: tuple[Slo, ...]) -> dict[str, str]:
    """Each limit's rule in words (run.json and the report)."""
    rules = {}
    if params.memory_budget_bytes is not None:
        rules[MEMORY] = (
            f"the target's steady RSS (median over the step's last window) at or over "
            f"{params.memory_budget_bytes / MIB:,.0f} MiB"
        )
    if params.min_available_bytes is not None:
        rules[AVAILABLE] = (
            f"host available memory (median over the step's last window) under "
            f"{params.min_available_bytes / MIB:,.0f} MiB"
        )
    if params.cpu_limit_pct is not None:
        rules[CPU] = (
            f"host CPU, or the target's CPU as a share of {params.cores} cores (means over the step's last "
            f"window), at or over {params.cpu_limit_pct:g} %"
        )
    request_slos = [s for s in slos if not s.of_tasks]
    if request_slos:
        need = min(s.attainment for s in request_slos)
        rules[SLO] = (
            f"goodput (the share of the requests ended in the step's last two windows that met every --slo: "
            f"{'; '.join(s.expr for s in request_slos)}) under {100 * need:g} %"
        )
    rules[ERRORS] = (
        f"more than {100 * ERROR_LIMIT:g} % of the requests ended in the step's last two windows failed "
        f"(judged with >= {MIN_ERROR_REQUESTS})"
    )
    return rules


def agents_to_nearest_limit(steps: list[dict], params: FitParams) -> float | None:
    """Agents from the last step to the nearest limit, on the slope of the last two steps (None: no limit
    is approached)."""
    if len(steps) < 2:
        return None
    a, b = steps[-2], steps[-1]
    gaps = []
    for name, verdict in b["limits"].items():
        before = a["limits"].get(name, {}).get("value")
        now, limit = verdict["value"], verdict["limit"]
        if before is None or now is None or b["agents"] == a["agents"] or name in (SLO, ERRORS):
            continue
        slope = (now - before) / (b["agents"] - a["agents"])
        toward = slope < 0 if name == AVAILABLE else slope > 0
        if toward:
            gaps.append((limit - now) / slope)
    return min(gaps) if gaps else None


class FitProfile(ProfileTraits):
    """LoadTestShape adapter: the plan's agents, a jump at each step."""

    name = "fit"
    one_process = True  # judged live on this process's rows and sampler: refused on a master or worker
    errors_are_its_measure = True  # it adds agents until a limit binds: errors past one are its answer

    def __init__(
        self, params: FitParams, slos: tuple[Slo, ...], clock: Callable[[], float] = time.time
    ) -> None:
        self.params = params
        self.slos = slos
        self.memory_budget_bytes = params.memory_budget_bytes
        self._clock = clock
        self.plan: FitPlan | None = None

    def paced_by(self, start_ts: float) -> FitPlan:
        self.plan = FitPlan(self.params, self.slos, start_ts)
        return self.plan

    def tick(self, t: float) -> Tick | None:
        now = self._clock()
        if self.plan is None:
            self.paced_by(now - t)
        assert self.plan is not None
        self.plan.advance(now)
        if self.plan.done:
            return None
        agents = self.plan.agents
        phase = BASELINE if agents == 0 else f"step-{len(self.plan.steps)}"
        return Tick(agents, float(max(1, self.plan.step)), phase)

    def peak_users(self) -> int:
        return self.params.max_agents

    def phases(self) -> list[Phase]:
        if self.plan is None:
            return []
        origin = self.plan.start_ts
        spans = [
            Phase(
                BASELINE if s["agents"] == 0 else f"step-{i}", s["start_ts"] - origin, s["scored_ts"] - origin
            )
            for i, s in enumerate(self.plan.steps)
        ]
        if not self.plan.done:
            i, cur = len(self.plan.steps), self.plan.current
            spans.append(Phase(BASELINE if cur.agents == 0 else f"step-{i}", cur.start_ts - origin, None))
        return spans


@dataclass(frozen=True)
class SharedOptions:
    """The shared options the fit reads (scenarios/options.py ProfileOptions' fields of these names)."""

    step_every_s: float | None = None
    max_agents: int | None = None
    baseline_s: float | None = None
    slo_exprs: tuple[str, ...] = ()
    stages: str | None = None


def build(limits: FitLimits, opts: SharedOptions) -> FitProfile:
    """The fit profile from its own options and the shared ones it reads."""
    if opts.stages:
        raise ProfileConfigError("--stages does not apply to --load-profile fit (use --step-agents)")
    slos = tuple(parse_slo(e, f"--slo #{i}") for i, e in enumerate(opts.slo_exprs, 1))
    every = opts.step_every_s or DEFAULT_STEP_EVERY_S
    params = FitParams(
        step_agents=limits.step_agents,
        step_every_s=every,
        max_hold_s=limits.max_hold_s or MAX_HOLD_FACTOR * every,
        max_agents=opts.max_agents or DEFAULT_MAX_AGENTS,
        baseline_s=every if opts.baseline_s is None else opts.baseline_s,
        memory_budget_bytes=limits.memory_budget_bytes,
        min_available_bytes=limits.min_available_bytes,
        cpu_limit_pct=limits.cpu_limit_pct,
        slos=tuple(s.expr for s in slos),
        project=limits.project,
        cores=os.cpu_count() or 1,
    )
    if params.max_hold_s < every:
        raise ProfileConfigError(
            f"--step-max-hold {params.max_hold_s:g}s is shorter than --step-every {every:g}s: a step holds "
            "at least --step-every"
        )
    return FitProfile(params, slos)
