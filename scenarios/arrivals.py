"""Open model: an arrival-rate schedule and a pacer that hands arrivals to free agents and counts drops.

Pure logic: callers pass `now`; nothing sleeps. The pacer takes any timing (arrival index and offset
from the start: a seeded arrival process over the schedule, scenarios/arrival_process.py, or a replayed
trace), so every source of arrivals is paced, dropped and counted the same way. An arrival nobody was
free to start within `late_after_s` of its due time is dropped and counted (k6's dropped_iterations),
never queued, so overload shows up as drops instead of silently lowering the offered load (coordinated
omission).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from scenarios.shape import Stage


class ArrivalSchedule:
    """Arrivals per second as a piecewise-linear curve over elapsed seconds (k6 ramping-arrival-rate).

    Built from stages whose targets are rates; `expected(t)` is the integral of the rate (the arrival
    count due by t) and `time_at(count)` its inverse, the map an arrival process's operational time
    goes through so that it follows the shape.
    """

    def __init__(self, stages: Sequence[Stage], scale: float = 1.0) -> None:
        if any(math.isinf(s.duration_s) for s in stages):
            raise ValueError("an arrival schedule needs finite stages")
        self._segments: list[tuple[float, float, float, float, float]] = []  # start, dur, r0, r1, count0
        t = count = previous = 0.0
        for stage in stages:
            r1 = stage.target * scale
            if stage.duration_s > 0:
                self._segments.append((t, stage.duration_s, previous, r1, count))
                count += (previous + r1) / 2 * stage.duration_s
                t += stage.duration_s
            previous = r1
        self.end_s = t
        self.total = count  # expected arrivals over the whole schedule

    def rate(self, t: float) -> float:
        """Arrivals per second due at elapsed time t."""
        for start, dur, r0, r1, _ in self._segments:
            if start <= t < start + dur:
                return r0 + (r1 - r0) * (t - start) / dur
        return 0.0

    def expected(self, t: float) -> float:
        """Arrivals due in [0, t): the integral of the rate."""
        for start, dur, r0, r1, count0 in self._segments:
            if t < start + dur:
                x = max(t - start, 0.0)
                return count0 + r0 * x + (r1 - r0) / dur * x * x / 2
        return self.total

    def time_at(self, count: float) -> float | None:
        """Elapsed time by which `count` arrivals are due; None when the schedule ends first."""
        if count >= self.total:
            return None
        for start, dur, r0, r1, count0 in self._segments:
            count1 = count0 + (r0 + r1) / 2 * dur
            if count < count1:
                return start + _solve(count - count0, r0, (r1 - r0) / dur)
        return None

    def rate_points(self) -> list[list[float]]:
        """The curve as [elapsed s, arrivals/s] corners (a jump is two points at one time): what run.json
        records, so analysis reads the asked rate at any moment without rebuilding the profile."""
        points: list[list[float]] = []
        for start, dur, r0, r1, _ in self._segments:
            points += [[start, r0], [start + dur, r1]]
        return points


@dataclass(frozen=True)
class Arrival:
    """One arrival handed to an agent: its index in the whole process (the same on every worker, so a
    trace's k-th request is the k-th arrival) and the UTC time it is due."""

    index: int
    due_ts: float


class Pacer:
    """Shared by all agents of one load generator: who starts which arrival, and how many were dropped."""

    def __init__(self, timing: Iterable[tuple[int, float]], start_ts: float, late_after_s: float = 1.0):
        """`timing`: (arrival index, seconds after start_ts) in time order."""
        self.start_ts = start_ts
        self.late_after_s = late_after_s
        self.issued = 0  # arrivals handed to an agent
        self.dropped = 0  # arrivals due while no agent was free
        self.first_dropped_ts: float | None = None  # when the first dropped arrival was due
        self._timing = iter(timing)
        self._next = next(self._timing, None)  # the next arrival not yet issued or dropped

    def claim(self, now: float) -> Arrival | None:
        """A free agent asks for work: its next arrival (due maybe already, then start at once), or None
        when the timing has no arrivals left."""
        self.settle(now)
        if self._next is None:
            return None
        index, offset = self._next
        self._next = next(self._timing, None)
        self.issued += 1
        return Arrival(index, self.start_ts + offset)

    def settle(self, now: float) -> int:
        """Count as dropped every arrival overdue by more than late_after_s; returns the total dropped."""
        limit = now - self.start_ts - self.late_after_s
        while self._next is not None and self._next[1] < limit:
            if self.first_dropped_ts is None:
                self.first_dropped_ts = self.start_ts + self._next[1]
            self.dropped += 1
            self._next = next(self._timing, None)
        return self.dropped


def _solve(m: float, r0: float, a: float) -> float:
    """x >= 0 with r0*x + a*x^2/2 = m (the cancellation-free root, valid for a = 0 too)."""
    if m <= 0:
        return 0.0
    return 2 * m / (r0 + math.sqrt(max(r0 * r0 + 2 * a * m, 0.0)))
