"""Breakpoint profile: add users step by step until a threshold with abort fails, capped by a maximum.

The run is stopped by the threshold evaluator, not by this shape; BreakpointStop records where.
The breaking level itself is computed later from the history (analysis/), not from the stop point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scenarios.options import ProfileOptions
from scenarios.profile import Profile
from scenarios.shape import Stage, StagedProfile
from scenarios.stages import build_from_stages, with_baseline


@dataclass(frozen=True)
class BreakpointParams:
    step_users: int = 1  # --step-users
    step_every_s: float = 10.0  # --step-every
    max_users: int = 200  # --peak-users: the cap; reaching it ends the run without a break
    baseline_s: float = 0.0


@dataclass(frozen=True)
class BreakpointStop:
    """Where the run was stopped by a failing abort threshold (goes to run.json "breakpoint")."""

    t_s: float  # elapsed seconds since the profile started
    ts: float  # UTC epoch seconds
    planned_users: int  # what the profile asked for at t_s
    running_users: int | None  # what Locust actually had running, when the caller knows it
    threshold: str  # the expression that failed


class BreakpointProfile(StagedProfile):
    """Steps up until an aborting threshold stops it; where it stopped is recorded (stop_point)."""

    records_stop_point = True


def build(opts: ProfileOptions) -> StagedProfile:
    if opts.stages:
        return build_from_stages("breakpoint", opts, BreakpointProfile)
    d = BreakpointParams()
    p = BreakpointParams(
        step_users=opts.step_users or d.step_users,
        step_every_s=opts.step_every_s or d.step_every_s,
        max_users=opts.peak_users or d.max_users,
        baseline_s=opts.baseline_s or 0.0,
    )
    return BreakpointProfile("breakpoint", p, with_baseline(step_stages(p), p.baseline_s))


def step_stages(p: BreakpointParams) -> list[Stage]:
    """A jump of step_users every step_every_s, from step_users up to max_users (the last step is held)."""
    stages: list[Stage] = []
    for k in range(1, math.ceil(p.max_users / p.step_users) + 1):
        users = min(k * p.step_users, p.max_users)
        stages += [Stage(0, users, "ramp"), Stage(p.step_every_s, users, "ramp")]
    return stages


def stop_point(
    profile: Profile, t_s: float, ts: float, threshold: str, running_users: int | None = None
) -> BreakpointStop:
    """Record the stop: call it when the evaluator reports an abort due during a breakpoint run."""
    tick = profile.tick(t_s)
    return BreakpointStop(t_s, ts, tick.users if tick else 0, running_users, threshold)
