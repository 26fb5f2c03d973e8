"""Open model: an arrival-rate schedule and a pacer that hands arrivals to free agents and counts drops.

Pure logic: callers pass `now`; nothing sleeps. An arrival nobody was free to start within
`late_after_s` of its due time is dropped and counted (k6's dropped_iterations), never queued, so
overload shows up as drops instead of silently lowering the offered load (coordinated omission).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from scenarios.shape import Stage


class ArrivalSchedule:
    """Arrivals per second as a piecewise-linear curve over elapsed seconds (k6 ramping-arrival-rate).

    Built from stages whose targets are rates; arrival k (0-based) is due when the expected count
    reaches k, so a constant rate r gives arrivals at 0, 1/r, 2/r, ...
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

    def index_of(self, k: int) -> int:
        return k

    def time_of(self, k: int) -> float | None:
        """Elapsed time arrival k is due; None when the schedule ends first."""
        if k >= self.total:
            return None
        for start, dur, r0, r1, count0 in self._segments:
            count1 = count0 + (r0 + r1) / 2 * dur
            if k < count1:
                return start + _solve(k - count0, r0, (r1 - r0) / dur)
        return None


class OffsetSchedule:
    """Arrivals at given offsets from the start (a trace's timestamps, in time order), `speed` times
    faster; read like ArrivalSchedule: arrival k is due at time_of(k). A distributed worker paces every
    `stride`-th of them from `first`: its arrival k is the trace's line index_of(k)."""

    def __init__(
        self, offsets_s: Sequence[float], speed: float = 1.0, first: int = 0, stride: int = 1
    ) -> None:
        self.offsets = tuple(offset / speed for offset in offsets_s[first::stride])
        self.first, self.stride = first, stride
        self.total = len(self.offsets)
        self.end_s = self.offsets[-1] if self.offsets else 0.0

    def index_of(self, k: int) -> int:
        return self.first + k * self.stride

    def time_of(self, k: int) -> float | None:
        return self.offsets[k] if k < self.total else None

    def expected(self, t: float) -> float:
        """Arrivals due in [0, t)."""
        return bisect.bisect_left(self.offsets, t)


class Pacer:
    """Shared by all agents of one load generator: who starts which arrival, and how many were dropped."""

    def __init__(
        self, schedule: ArrivalSchedule | OffsetSchedule, start_ts: float, late_after_s: float = 1.0
    ) -> None:
        self.schedule = schedule
        self.start_ts = start_ts
        self.late_after_s = late_after_s
        self.issued = 0  # arrivals handed to an agent
        self.dropped = 0  # arrivals due while no agent was free
        self._next = 0  # index of the next arrival not yet issued or dropped

    def claim(self, now: float) -> float | None:
        """A free agent asks for work: the UTC time to start its next arrival (maybe already past,
        then start at once), or None when the schedule has no arrivals left."""
        arrival = self.claim_arrival(now)
        return None if arrival is None else arrival[1]

    def claim_arrival(self, now: float) -> tuple[int, float] | None:
        """As claim(), with the arrival's index in the schedule (a trace replay sends that line)."""
        self.settle(now)
        t = self.schedule.time_of(self._next)
        if t is None:
            return None
        index = self.schedule.index_of(self._next)
        self._next += 1
        self.issued += 1
        return index, self.start_ts + t

    def settle(self, now: float) -> int:
        """Count as dropped every arrival overdue by more than late_after_s; returns the total dropped."""
        overdue = math.ceil(self.schedule.expected(now - self.start_ts - self.late_after_s))
        if overdue > self._next:
            self.dropped += overdue - self._next
            self._next = overdue
        return self.dropped


def pacer_from_doc(doc: dict, worker_index: int = 0) -> Pacer:
    """The pacer of one worker's share (OpenModelProfile.share_doc, TraceReplayProfile.share_doc)."""
    schedule: ArrivalSchedule | OffsetSchedule
    if "trace_offsets" in doc:
        stride = int(doc["stride"])
        schedule = OffsetSchedule(doc["trace_offsets"], first=worker_index % stride, stride=stride)
    else:
        schedule = ArrivalSchedule([Stage(*s) for s in doc["stages"]], scale=doc["scale"])
    return Pacer(schedule, doc["start_ts"], doc["late_after_s"])


def _solve(m: float, r0: float, a: float) -> float:
    """x >= 0 with r0*x + a*x^2/2 = m (the cancellation-free root, valid for a = 0 too)."""
    if m <= 0:
        return 0.0
    return 2 * m / (r0 + math.sqrt(max(r0 * r0 + 2 * a * m, 0.0)))
