"""Sweep profile (GuideLLM's sweep): a synchronous pass (one agent, back to back), a pass at maximum
throughput (the whole agent pool, back to back), then K arrival rates spaced evenly between the two
measured rates, each held for the same time.

SweepPlan is the sweep's clock and its one measurement (successful requests completed per second in
the second half of each closed pass, fed row by row: the tick that spawns the throughput pass's pool
comes up to a second late, and a pool takes a moment to fill the gateway); every method takes `now`,
so it is tested without a clock. The verdict per rate is the analysis's (analysis/sweep.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from contract.schema import REQUEST
from scenarios.arrival_process import ArrivalProcess, arrival_timing
from scenarios.arrivals import Arrival, ArrivalSchedule, Pacer
from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.shape import Phase, Stage, Tick
from scenarios.traits import ProfileTraits

SYNCHRONOUS, THROUGHPUT, RATE = "synchronous", "throughput", "rate"
CLOSED_PASSES = frozenset({SYNCHRONOUS, THROUGHPUT})


@dataclass(frozen=True)
class SweepParams:
    rates: int = 8  # --sweep-rates: K rates between the synchronous and the throughput pass
    hold_s: float = 30.0  # --hold: how long each pass is held
    max_agents: int = 32  # --max-agents: the throughput pass's concurrency, and the rate passes' pool
    baseline_s: float = 0.0
    arrivals: str = "constant"  # --arrivals, --burstiness, --arrival-seed: the rate passes' process
    burstiness: float = 1.0
    arrival_seed: int = 0

    @property
    def process(self) -> ArrivalProcess:
        return ArrivalProcess(self.arrivals, self.burstiness, self.arrival_seed)


@dataclass
class SweepPass:
    """One pass, as written to run.json "sweep"; offsets in seconds from the sweep's start."""

    n: int
    kind: str  # synchronous, throughput or rate
    start_s: float
    end_s: float
    rate: float | None = None  # asked arrivals/s (rate passes; known once the throughput pass ended)
    completed: int = 0  # successful requests that finished in the pass's second half (closed passes)

    @property
    def measured_s(self) -> float:
        """The part of a closed pass its rate is measured over: the second half."""
        return (self.end_s - self.start_s) / 2

    @property
    def phase(self) -> str:
        return self.kind if self.kind in CLOSED_PASSES else f"rate-{self.n - 2}"


class SweepPlan:
    """Which pass is on, the rates the closed passes measured, and the pacers of the rate passes."""

    def __init__(self, params: SweepParams, start_ts: float) -> None:
        self.params = params
        self.start_ts = start_ts
        self.passes = layout(params)
        self._pacers: dict[int, Pacer] = {}

    def pass_at(self, now: float) -> SweepPass | None:
        """The pass on at `now`; None in the baseline and after the last pass."""
        t = now - self.start_ts
        return next((p for p in self.passes if p.start_s <= t < p.end_s), None)

    def observe_request(self, row: Mapping[str, Any]) -> None:
        """A requests.csv row: a success that finished in a closed pass's second half counts toward its
        rate."""
        if str(row.get("ok")) not in ("1", "True"):
            return
        end = float(row["ts"]) + float(row.get(REQUEST.latency_ms) or 0.0) / 1000.0 - self.start_ts
        for p in self.passes:
            if p.kind in CLOSED_PASSES and p.end_s - p.measured_s <= end < p.end_s:
                p.completed += 1

    def claim(self, now: float) -> Arrival | None:
        """An agent's next arrival in the current rate pass (None when there is none)."""
        current = self.pass_at(now)
        if current is None or current.kind != RATE:
            return None
        if current.n not in self._pacers:
            self._pacers[current.n] = self._pacer(current)
        return self._pacers[current.n].claim(now)

    def settle(self, now: float) -> int:
        """Arrivals dropped so far, over every rate pass."""
        return sum(pacer.settle(now) for pacer in self._pacers.values())

    @property
    def issued(self) -> int:
        return sum(pacer.issued for pacer in self._pacers.values())

    @property
    def first_dropped_ts(self) -> float | None:
        return min(
            (p.first_dropped_ts for p in self._pacers.values() if p.first_dropped_ts is not None),
            default=None,
        )

    def rate_points(self) -> list[list[float]]:
        """The asked arrivals/s of the rate passes, as corners over elapsed seconds (run.json)."""
        return [[t, p.rate] for p in self.passes if p.rate is not None for t in (p.start_s, p.end_s)]

    def boundaries(self) -> list[dict]:
        """[{"n", "kind", "start_ts", "end_ts", "rate", "completed", "measured_rate"}] for run.json
        (measured_rate: successes per second over the closed pass's second half)."""
        out = []
        for p in self.passes:
            row = asdict(p) | {"start_ts": self.start_ts + p.start_s, "end_ts": self.start_ts + p.end_s}
            row["measured_rate"] = p.completed / p.measured_s if p.kind in CLOSED_PASSES else None
            out.append(row)
        return out

    def _pacer(self, current: SweepPass) -> Pacer:
        if current.rate is None:
            self._set_rates()
        rate, hold = current.rate or 0.0, self.params.hold_s
        schedule = ArrivalSchedule([Stage(0, rate, current.phase), Stage(hold, rate, current.phase)])
        p = self.params.process
        process = ArrivalProcess(p.kind, p.burstiness, p.seed + current.n)  # passes drawn independently
        return Pacer(arrival_timing(schedule, process), self.start_ts + current.start_s)

    def _set_rates(self) -> None:
        """K rates evenly spaced strictly between the synchronous and the throughput pass's rates."""
        sync, peak = (p.completed / p.measured_s for p in self.passes[:2])
        k = self.params.rates
        for i, p in enumerate(self.passes[2:], start=1):
            p.rate = sync + (peak - sync) * i / (k + 1)


def layout(params: SweepParams) -> list[SweepPass]:
    """The passes back to back after the baseline: synchronous, throughput, then the K rates."""
    kinds = [SYNCHRONOUS, THROUGHPUT] + [RATE] * params.rates
    b, h = params.baseline_s, params.hold_s
    return [SweepPass(n, kind, b + (n - 1) * h, b + n * h) for n, kind in enumerate(kinds, start=1)]


class SweepProfile(ProfileTraits):
    """LoadTestShape adapter: 0 agents in the baseline, 1 in the synchronous pass, the pool after."""

    name = "sweep"
    one_process = True  # its rates are measured as it goes: refused on a master or a worker
    errors_are_its_measure = True  # it drives rates past the gateway's: errors > 5 % at a rate = broke

    def __init__(self, params: SweepParams) -> None:
        self.params = params
        self.process = params.process
        self.passes = layout(params)
        self.end_s = self.passes[-1].end_s
        self.plan: SweepPlan | None = None

    def paced_by(self, start_ts: float) -> SweepPlan:
        self.plan = SweepPlan(self.params, start_ts)
        self.passes = self.plan.passes
        return self.plan

    def rate_points(self) -> list[list[float]]:
        """The rate passes' asked arrivals/s so far (known once the throughput pass has ended)."""
        return self.plan.rate_points() if self.plan is not None else []

    def arrivals_asked(self, start_ts: float) -> dict:
        """Its rate passes' arrivals: the rate curve fills in as the closed passes measure it."""
        return self.process.asked(start_ts, self.rate_points())

    def tick(self, t: float) -> Tick | None:
        if t >= self.end_s:
            return None
        current = next((p for p in self.passes if p.start_s <= t < p.end_s), None)
        if current is None:
            return Tick(0, 1.0, "baseline")
        agents = 1 if current.kind == SYNCHRONOUS else self.params.max_agents
        return Tick(agents, float(agents), current.phase)

    def peak_users(self) -> int:
        return self.params.max_agents  # the throughput and rate passes' pool

    def phases(self) -> list[Phase]:
        base = [Phase("baseline", 0.0, self.params.baseline_s)] if self.params.baseline_s else []
        return base + [Phase(p.phase, p.start_s, p.end_s) for p in self.passes]


def build(opts: ProfileOptions) -> SweepProfile:
    if opts.stages:
        raise ProfileConfigError(
            "--stages does not apply to --load-profile sweep (use --sweep-rates, --hold)"
        )
    if opts.hold_s is not None and opts.hold_s <= 0:
        raise ProfileConfigError(
            "--load-profile sweep --hold 0s: each pass must last longer than 0s (default 30s)"
        )
    d = SweepParams()
    return SweepProfile(
        SweepParams(
            rates=d.rates if opts.sweep_rates is None else opts.sweep_rates,
            hold_s=d.hold_s if opts.hold_s is None else opts.hold_s,
            max_agents=opts.max_agents or d.max_agents,
            baseline_s=opts.baseline_s or 0.0,
            arrivals=opts.arrival_process.kind,
            burstiness=opts.arrival_process.burstiness,
            arrival_seed=opts.arrival_process.seed,
        )
    )
