"""Ticks and phases (what a profile answers) and the staged shape most profiles compile to.

A staged profile is a pure function of elapsed seconds: no clock, no Locust import, no I/O.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contract.units import parse_duration
from scenarios.errors import ProfileConfigError
from scenarios.traits import ProfileTraits


@dataclass(frozen=True)
class Tick:
    """What Locust's LoadTestShape.tick() returns, plus the phase name for run.json and shading."""

    users: int
    spawn_rate: float  # users started or stopped per second on the way to `users`
    phase: str

    def as_locust(self) -> tuple[int, float]:
        return self.users, self.spawn_rate


@dataclass(frozen=True)
class Phase:
    """A named span of the run in elapsed seconds; end_s is None while open-ended."""

    name: str
    start_s: float
    end_s: float | None


BASELINE = "baseline"  # the idle lead-in phase (--baseline): not part of the loaded time


@dataclass(frozen=True)
class Stage:
    """Go from the previous stage's target to `target` in `duration_s` (k6 stage semantics).

    A zero duration is a jump; math.inf holds until stopped.
    """

    duration_s: float
    target: float
    phase: str


class StagedProfile(ProfileTraits):
    """A profile defined by a list of stages, starting from 0 users at t = 0."""

    def paced_by(self, start_ts: float) -> None:
        """Closed model: agents loop with their own wait time, nothing paces them."""

    def __init__(self, name: str, params: Any, stages: Sequence[Stage]) -> None:
        if not stages:
            raise ProfileConfigError(f"profile {name}: no stages")
        if not any(s.duration_s > 0 for s in stages if s.phase != BASELINE):
            raise ProfileConfigError(
                f"--load-profile {name}: its stages last 0s in all (--stages, or --ramp and --hold): "
                "a run that ends as it starts measures nothing; give a stage a duration"
            )
        self.name = name
        self.params = params
        self.stages = tuple(stages)
        self._starts = _starts(self.stages)
        self._rates = _spawn_rates(self.stages)
        self.end_s = self._starts[-1] + self.stages[-1].duration_s

    def tick(self, t: float) -> Tick | None:
        if t >= self.end_s:
            return None
        i = self._index(t)
        return Tick(round(self.stages[i].target), self._rates[i], self.stages[i].phase)

    def peak(self) -> float:
        return max(s.target for s in self.stages)

    def peak_users(self) -> int:
        return math.ceil(self.peak())

    def phases(self) -> list[Phase]:
        spans: list[Phase] = []
        for stage, start in zip(self.stages, self._starts, strict=True):
            end = start + stage.duration_s
            if stage.duration_s == 0:
                continue
            if spans and spans[-1].name == stage.phase:
                spans[-1] = Phase(stage.phase, spans[-1].start_s, _finite(end))
            else:
                spans.append(Phase(stage.phase, start, _finite(end)))
        return spans

    def _index(self, t: float) -> int:
        return max(0, bisect_right(self._starts, max(t, 0.0)) - 1)


def parse_stages(text: str, option: str = "--stages") -> list[Stage]:
    """Stages from "30s:10,1m:10,10s:0" (duration:target, k6 style); phases named by direction."""
    stages: list[Stage] = []
    previous = 0.0
    for n, item in enumerate(text.split(","), start=1):
        duration_s, target = _parse_stage_item(item, n, option)
        stages.append(Stage(duration_s, target, _direction(previous, target)))
        previous = target
    return stages


def _parse_stage_item(item: str, n: int, option: str) -> tuple[float, int]:
    where = f"{option} item {n} {item.strip()!r}"
    duration, sep, target = item.strip().partition(":")
    if not sep:
        raise ProfileConfigError(f"{where}: expected DURATION:USERS, e.g. 30s:10")
    try:
        duration_s = parse_duration(duration)
    except ValueError as e:
        raise ProfileConfigError(f"{where}: {e}") from None
    if not target.strip().isdigit():
        raise ProfileConfigError(f"{where}: users must be a whole number >= 0, got {target.strip()!r}")
    return duration_s, int(target)


def _direction(previous: float, target: float) -> str:
    if target > previous:
        return "ramp-up"
    return "plateau" if target == previous else "ramp-down"


def _starts(stages: Sequence[Stage]) -> list[float]:
    starts, t = [], 0.0
    for stage in stages:
        starts.append(t)
        t += stage.duration_s
    return starts


def _spawn_rates(stages: Sequence[Stage]) -> list[float]:
    """Users per second for each stage: the ramp's slope; a jump takes one tick; a hold keeps the last."""
    rates, previous, last_rate = [], 0.0, 1.0
    for stage in stages:
        delta = abs(stage.target - previous)
        if delta > 0:
            last_rate = delta / stage.duration_s if stage.duration_s > 0 else delta
        rates.append(last_rate)
        previous = stage.target
    return rates


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else value
