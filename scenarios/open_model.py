"""Open-model wrapper: a staged profile's shape read as arrivals per second, served by a fixed agent pool.

Locust is asked for the pool (all agents at once); the Pacer decides when each arrival starts, by the
arrival process asked for (constant, Poisson, gamma). No clock here: the caller makes the Pacer with the
run's start time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scenarios.arrival_process import ArrivalProcess, arrival_timing, share_of
from scenarios.arrivals import ArrivalSchedule, Pacer
from scenarios.errors import ProfileConfigError
from scenarios.shape import Phase, Stage, StagedProfile, Tick
from scenarios.trace_replay import trace_pacer
from scenarios.traits import ProfileTraits


@dataclass(frozen=True)
class OpenModelParams:
    shape: Any  # the wrapped profile's params
    peak_arrival_rate: float  # --arrival-rate: arrivals/s at the shape's peak
    max_agents: int  # --max-agents: agents (Locust users) serving arrivals
    expected_arrivals: float
    arrivals: str  # --arrivals: constant, poisson or gamma
    burstiness: float  # --burstiness (gamma's shape)
    arrival_seed: int  # --arrival-seed


class OpenModelProfile(ProfileTraits):
    """Same name, phases and traits as the wrapped profile; users = the agent pool for the whole run,
    spawned before the first arrival is due."""

    spawns_pool_first = True

    def __init__(
        self,
        inner: StagedProfile,
        peak_arrival_rate: float,
        max_agents: int | None,
        process: ArrivalProcess | None = None,
    ) -> None:
        if inner.peak() <= 0:
            raise ProfileConfigError(f"--arrival-rate: profile {inner.name} has no load to scale")
        self.name = inner.name
        self.scale = peak_arrival_rate / inner.peak()
        self.schedule = ArrivalSchedule(inner.stages, scale=self.scale)
        self.process = process = process or ArrivalProcess()
        pool = max_agents or math.ceil(inner.peak())
        self.params = OpenModelParams(
            inner.params,
            peak_arrival_rate,
            pool,
            self.schedule.total,
            process.kind,
            process.burstiness,
            process.seed,
        )
        self._inner = inner
        self.end_s = inner.end_s
        self.judges_trends, self.records_stop_point = inner.judges_trends, inner.records_stop_point

    def tick(self, t: float) -> Tick | None:
        inner = self._inner.tick(t)
        if inner is None:
            return None
        pool = self.params.max_agents
        return Tick(pool, float(pool), inner.phase)

    def phases(self) -> list[Phase]:
        return self._inner.phases()

    def peak_users(self) -> int:
        return self.params.max_agents

    def paced_by(self, start_ts: float, late_after_s: float = 1.0) -> Pacer:
        """One per load generator; in a distributed run each worker gets a share (share_doc)."""
        return Pacer(arrival_timing(self.schedule, self.process), start_ts, late_after_s)

    def share_doc(self, share: int, shares: int, start_ts: float, late_after_s: float = 1.0) -> dict:
        """Plain data for load generator `share` of `shares` to pace its part of the arrivals from
        start_ts (sent to Locust workers in a message; pacer_from_doc rebuilds the pacer there)."""
        p = self.process
        return {
            "stages": [[s.duration_s, s.target, s.phase] for s in self._inner.stages],
            "scale": self.scale,
            "process": {"kind": p.kind, "burstiness": p.burstiness, "seed": p.seed},
            "share": share,
            "shares": max(shares, 1),
            "start_ts": start_ts,
            "late_after_s": late_after_s,
        }

    def rate_points(self) -> list[list[float]]:
        """The asked arrivals/s over elapsed seconds, as corners (run.json open_model.rate_points)."""
        return self.schedule.rate_points()

    def arrivals_asked(self, start_ts: float) -> dict:
        return self.process.asked(start_ts, self.rate_points())


def pacer_from_doc(doc: dict) -> Pacer:
    """The pacer of one worker's share (OpenModelProfile.share_doc): the whole process's arrivals,
    drawn from the same seed on every worker, every shares-th of them its own; a trace replay's share
    (TraceReplayProfile.share_doc) likewise."""
    if "trace_offsets" in doc:
        return trace_pacer(doc)
    schedule = ArrivalSchedule([Stage(*s) for s in doc["stages"]], scale=doc["scale"])
    timing = arrival_timing(schedule, ArrivalProcess(**doc["process"]))
    return Pacer(share_of(timing, doc["share"], doc["shares"]), doc["start_ts"], doc["late_after_s"])
