"""Open-model wrapper: a staged profile's shape read as arrivals per second, served by a fixed agent pool.

Locust is asked for the pool (all agents at once); the Pacer decides when each arrival starts.
No clock here: the caller makes the Pacer with the run's start time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scenarios.arrivals import ArrivalSchedule, Pacer
from scenarios.errors import ProfileConfigError
from scenarios.shape import Phase, StagedProfile, Tick


@dataclass(frozen=True)
class OpenModelParams:
    shape: Any  # the wrapped profile's params
    peak_arrival_rate: float  # --arrival-rate: arrivals/s at the shape's peak
    max_agents: int  # --max-agents: agents (Locust users) serving arrivals
    expected_arrivals: float


class OpenModelProfile:
    """Same name and phases as the wrapped profile; users = the agent pool for the whole run."""

    driver = None

    def __init__(self, inner: StagedProfile, peak_arrival_rate: float, max_agents: int | None) -> None:
        if inner.peak() <= 0:
            raise ProfileConfigError(f"--arrival-rate: profile {inner.name} has no load to scale")
        self.name = inner.name
        self.scale = peak_arrival_rate / inner.peak()
        self.schedule = ArrivalSchedule(inner.stages, scale=self.scale)
        pool = max_agents or math.ceil(inner.peak())
        self.params = OpenModelParams(inner.params, peak_arrival_rate, pool, self.schedule.total)
        self._inner = inner

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
        return Pacer(self.schedule, start_ts, late_after_s)

    def share_doc(self, workers: int, start_ts: float, late_after_s: float = 1.0) -> dict:
        """Plain data for one of `workers` load generators to pace rate / workers from start_ts
        (sent to Locust workers in a message; scenarios.arrivals.pacer_from_doc rebuilds the pacer)."""
        stages = [[s.duration_s, s.target, s.phase] for s in self._inner.stages]
        share = self.scale / max(workers, 1)
        return {"stages": stages, "scale": share, "start_ts": start_ts, "late_after_s": late_after_s}
