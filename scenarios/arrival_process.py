"""Arrival processes of the open model: when arrivals fall, as a pure, seeded function of the rate shape.

`constant` spaces them evenly, `poisson` draws exponential gaps, `gamma` draws gamma gaps of shape
`burstiness` (coefficient of variation 1/sqrt(burstiness): 1 is Poisson, below 1 burstier, above 1
smoother; vLLM's and AIPerf's convention). Gaps are drawn in operational time (the expected arrival
count) and mapped back through the schedule, so every process follows the profile's shape (stages,
breakpoint steps, spike). No clock, no I/O.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass

from scenarios.arrivals import ArrivalSchedule
from scenarios.errors import ProfileConfigError

PROCESSES = ("constant", "poisson", "gamma")


@dataclass(frozen=True)
class ArrivalProcess:
    """--arrivals, --burstiness, --arrival-seed: the same three give the same arrivals on every run."""

    kind: str = "constant"
    burstiness: float = 1.0  # gamma's shape; Poisson is gamma with burstiness 1
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in PROCESSES:
            raise ProfileConfigError(f"--arrivals {self.kind!r}: choose one of {', '.join(PROCESSES)}")
        if not (math.isfinite(self.burstiness) and self.burstiness > 0):
            raise ProfileConfigError(f"--burstiness {self.burstiness!r}: must be a finite number > 0")

    def asked(self, start_ts: float, rate_points: list[list[float]]) -> dict:
        """run.json "open_model": a rate curve's corners ([[elapsed s, arrivals/s], ...]) from start_ts,
        paced by this process."""
        return {
            "start_ts": start_ts,
            "rate_points": rate_points,
            "arrivals": self.kind,
            "burstiness": self.burstiness,
            "arrival_seed": self.seed,
        }


def unit_gaps(process: ArrivalProcess) -> Iterator[float]:
    """Gaps of mean 1 between successive arrivals in operational time; the first arrival of a constant
    process falls at 0 (k6's), a random one after a first gap (a renewal process started at 0)."""
    rng = random.Random(process.seed)
    if process.kind == "constant":
        yield 0.0
        while True:
            yield 1.0
    shape = 1.0 if process.kind == "poisson" else process.burstiness
    while True:
        yield rng.gammavariate(shape, 1.0 / shape)


def arrival_timing(schedule: ArrivalSchedule, process: ArrivalProcess) -> Iterator[tuple[int, float]]:
    """(arrival index, elapsed s) of the process over the schedule, in time order."""
    count = 0.0
    for index, gap in enumerate(unit_gaps(process)):
        count += gap
        t = schedule.time_at(count)
        if t is None:
            return
        yield index, t


def trace_timing(offsets_s: list[float], speedup: float = 1.0) -> Iterator[tuple[int, float]]:
    """A replayed trace's arrivals: the k-th request at its recorded offset, divided by `speedup`."""
    return ((index, offset / speedup) for index, offset in enumerate(offsets_s))


def share_of(timing: Iterator[tuple[int, float]], share: int, shares: int) -> Iterator[tuple[int, float]]:
    """One of `shares` load generators' part: every shares-th arrival of one and the same sequence, so
    together they pace exactly the arrivals asked for and splitting never changes their statistics (a
    sum of independent gamma processes would not be a gamma process)."""
    return ((index, t) for index, t in timing if index % shares == share)
