"""Trace replay: the open model paced by a trace's own timestamps (`--trace FILE`, `--trace-speed`),
served by a fixed pool of agents; arrivals no agent was free for are dropped and counted, as always.

Pure timing: the schedule is scenarios/arrivals.py's OffsetSchedule; the requests' sizes are the
workload's (agents take line k of the trace with arrival k). No clock here.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from scenarios.arrivals import OffsetSchedule, Pacer
from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.shape import Phase, Tick

PHASE = "replay"
SPAWN_PHASE = "spawn"
SPAWN_LEAD_S = 1.0  # the pool is spawned (in its first quarter second) before the first arrival is due
SPAWN_S = 0.25
BUSY_S = 5.0  # the default pool holds the busiest second's arrivals for this long each
MAX_DEFAULT_AGENTS = 200


@dataclass(frozen=True)
class TraceReplayParams:
    requests: int
    speed: float
    span_s: float  # from the first arrival's due time to the last's, after the speed-up
    max_agents: int


class TraceReplayProfile:
    """Users = the agent pool, spawned in the first SPAWN_LEAD_S, until the last arrival is due (plus the
    pacer's lateness allowance); the trace's clock starts after the spawn."""

    name = "trace"
    driver = None

    def __init__(self, offsets_s: tuple[float, ...], speed: float, max_agents: int | None) -> None:
        self.schedule = OffsetSchedule(offsets_s, speed)
        pool = max_agents or default_pool(self.schedule.offsets)
        self.params = TraceReplayParams(len(offsets_s), speed, self.schedule.end_s, pool)

    def tick(self, t: float) -> Tick | None:
        if t > SPAWN_LEAD_S + self.schedule.end_s + 1.0:  # past the last due arrival and its 1 s grace
            return None
        pool = self.params.max_agents
        return Tick(pool, pool / SPAWN_S, SPAWN_PHASE if t < SPAWN_LEAD_S else PHASE)

    def phases(self) -> list[Phase]:
        return [
            Phase(SPAWN_PHASE, 0.0, SPAWN_LEAD_S),
            Phase(PHASE, SPAWN_LEAD_S, SPAWN_LEAD_S + self.schedule.end_s),
        ]

    def paced_by(self, start_ts: float, late_after_s: float = 1.0) -> Pacer:
        """The trace's clock, from the end of the spawn (`start_ts` is the profile's start)."""
        return Pacer(self.schedule, start_ts + SPAWN_LEAD_S, late_after_s)

    def share_doc(self, workers: int, start_ts: float, late_after_s: float = 1.0) -> dict:
        """Plain data for one of `workers` load generators: every workers-th line of the trace, from the
        worker's own index (scenarios.arrivals.pacer_from_doc)."""
        stride = max(workers, 1)
        offsets = list(self.schedule.offsets)
        return {
            "trace_offsets": offsets,
            "stride": stride,
            "start_ts": start_ts + SPAWN_LEAD_S,  # the workers' pools spawn first, as here
            "late_after_s": late_after_s,
        }


def default_pool(offsets: tuple[float, ...]) -> int:
    """Agents enough for the busiest second's arrivals to each take up to BUSY_S (4..200)."""
    busiest = max((_in_window(offsets, i) for i in range(len(offsets))), default=1)
    return max(4, min(MAX_DEFAULT_AGENTS, math.ceil(busiest * BUSY_S)))


def _in_window(offsets: tuple[float, ...], i: int, window_s: float = 1.0) -> int:
    return bisect.bisect_left(offsets, offsets[i] + window_s) - i


def build(opts: ProfileOptions) -> TraceReplayProfile:
    if opts.trace_offsets_s is None:
        raise ProfileConfigError("--load-profile trace needs --trace FILE (or a [trace] in --workload)")
    return TraceReplayProfile(opts.trace_offsets_s, opts.trace_speed, opts.max_agents)
