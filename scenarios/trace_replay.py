"""Trace replay: the open model paced by a trace's own timestamps (`--trace FILE`, `--trace-speed`),
served by a fixed pool of agents; arrivals no agent was free for are dropped and counted, as always.

Pure timing: the pacer is scenarios/arrivals.py's over the trace's timing (arrival k = line k, due at
its offset / speed); the requests' sizes are the workload's (an agent takes line k with arrival k). No
clock here: the run starts the pacer once the pool has spawned (kit/runtime.py's spawn lead).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import Counter
from dataclasses import dataclass

from scenarios.arrival_process import share_of, trace_timing
from scenarios.arrivals import Pacer
from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.shape import Phase, Tick
from scenarios.traits import ProfileTraits

PHASE = "replay"
BUSY_S = 5.0  # the default pool holds the busiest second's arrivals for this long each
MAX_DEFAULT_AGENTS = 200


@dataclass(frozen=True)
class TraceReplayParams:
    requests: int
    speed: float
    span_s: float  # from the first line's due time to the last's, after the speed-up
    max_agents: int


class TraceReplayProfile(ProfileTraits):
    """Users = the agent pool until the last line is due, plus the pacer's 1 s allowance for lateness;
    the pool spawns before the first line is due."""

    name = "trace"
    spawns_pool_first = True

    def __init__(self, offsets_s: tuple[float, ...], speed: float, max_agents: int | None) -> None:
        self.offsets_s, self.speed = offsets_s, speed
        self.due_s = tuple(offset / speed for offset in offsets_s)
        self.end_s = self.due_s[-1] if self.due_s else 0.0
        pool = max_agents or default_pool(self.due_s)
        self.params = TraceReplayParams(len(offsets_s), speed, self.end_s, pool)

    def tick(self, t: float) -> Tick | None:
        if t > self.end_s + 1.0:
            return None
        pool = self.params.max_agents
        return Tick(pool, float(pool), PHASE)

    def phases(self) -> list[Phase]:
        return [Phase(PHASE, 0.0, self.end_s)]

    def peak_users(self) -> int:
        return self.params.max_agents

    def paced_by(self, start_ts: float, late_after_s: float = 1.0) -> Pacer:
        return Pacer(trace_timing(list(self.offsets_s), self.speed), start_ts, late_after_s)

    def share_doc(self, share: int, shares: int, start_ts: float, late_after_s: float = 1.0) -> dict:
        """Plain data for load generator `share` of `shares`: every shares-th line of the trace
        (scenarios.open_model.pacer_from_doc rebuilds its pacer)."""
        return {
            "trace_offsets": list(self.offsets_s),
            "speedup": self.speed,
            "share": share,
            "shares": max(shares, 1),
            "start_ts": start_ts,
            "late_after_s": late_after_s,
        }

    def rate_points(self) -> list[list[float]]:
        """The trace's arrivals per second, second by second, as corners (run.json open_model
        rate_points: the load levels in arrivals/s); a run of seconds at one rate is one pair of corners,
        so the list grows with the trace's lines, not its span."""
        per_second = Counter(math.floor(due) for due in self.due_s)
        edges = sorted({0, math.ceil(self.end_s) + 1, *per_second, *(s + 1 for s in per_second)})
        points: list[list[float]] = []
        for start, end in itertools.pairwise(edges):
            rate = float(per_second.get(start, 0))
            if points and points[-1][1] == rate:
                points[-1][0] = float(end)
            else:
                points += [[float(start), rate], [float(end), rate]]
        return points

    def arrivals_asked(self, start_ts: float) -> dict:
        """The trace's own timing: line k due at start + offset."""
        return {"start_ts": start_ts, "rate_points": self.rate_points(), "arrivals": "trace"}


def trace_pacer(doc: dict) -> Pacer:
    """The pacer of one worker's share (TraceReplayProfile.share_doc)."""
    timing = share_of(trace_timing(doc["trace_offsets"], doc["speedup"]), doc["share"], doc["shares"])
    return Pacer(timing, doc["start_ts"], doc["late_after_s"])


def default_pool(due_s: tuple[float, ...]) -> int:
    """Agents enough for the busiest second's arrivals to each take up to BUSY_S (4..200)."""
    busiest = max((_in_window(due_s, t) for t in due_s), default=1)
    return max(4, min(MAX_DEFAULT_AGENTS, math.ceil(busiest * BUSY_S)))


def _in_window(due_s: tuple[float, ...], start: float, window_s: float = 1.0) -> int:
    """Arrivals due in [start, start + window_s)."""
    return bisect.bisect_left(due_s, start + window_s) - bisect.bisect_left(due_s, start)


def build(opts: ProfileOptions) -> TraceReplayProfile:
    if opts.trace_offsets_s is None:
        raise ProfileConfigError("--load-profile trace needs --trace FILE (or a [trace] in --workload)")
    return TraceReplayProfile(opts.trace_offsets_s, opts.trace_speed, opts.max_agents)
