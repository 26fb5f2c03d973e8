"""Smoke profile: a few users for a short while, to check the script and the target work at all.

Starts its users at once and holds them; no ramp-down (Locust's --stop-timeout lets calls finish).
"""

from __future__ import annotations

from dataclasses import dataclass

from scenarios.options import ProfileOptions
from scenarios.shape import Stage, StagedProfile
from scenarios.stages import build_from_stages, with_baseline

DEFAULT_USERS = 3
DEFAULT_DURATION_S = 30.0


@dataclass(frozen=True)
class SmokeParams:
    users: int
    duration_s: float
    baseline_s: float


def build(opts: ProfileOptions) -> StagedProfile:
    if opts.stages:
        return build_from_stages("smoke", opts)
    p = SmokeParams(
        users=opts.peak_users or DEFAULT_USERS,
        duration_s=opts.duration_s or DEFAULT_DURATION_S,
        baseline_s=opts.baseline_s or 0.0,
    )
    stages = [Stage(0, p.users, "ramp-up"), Stage(p.duration_s, p.users, "plateau")]
    return StagedProfile("smoke", p, with_baseline(stages, p.baseline_s))
