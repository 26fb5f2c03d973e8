"""Spike profile: steady base load, a near-instant jump to the spike, hold, drop, then recovery.

The recovery phase is what the report judges (does latency come back?); no clock here.
"""

from __future__ import annotations

from dataclasses import dataclass

from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.shape import Stage, StagedProfile
from scenarios.stages import build_from_stages, with_baseline


@dataclass(frozen=True)
class SpikeParams:
    base_users: int = 5
    spike_users: int = 40
    jump_s: float = 1.0  # --ramp: time to go up to the spike and back down
    hold_s: float = 30.0  # --hold: time at the top
    settle_s: float = 30.0  # --settle: time at base load before the spike and after it (recovery)
    baseline_s: float = 0.0


def build(opts: ProfileOptions) -> StagedProfile:
    if opts.stages:
        return build_from_stages("spike", opts)
    d = SpikeParams()
    p = SpikeParams(
        base_users=d.base_users if opts.base_users is None else opts.base_users,
        spike_users=opts.spike_users or d.spike_users,
        jump_s=d.jump_s if opts.ramp_s is None else opts.ramp_s,
        hold_s=d.hold_s if opts.hold_s is None else opts.hold_s,
        settle_s=d.settle_s if opts.settle_s is None else opts.settle_s,
        baseline_s=opts.baseline_s or 0.0,
    )
    if p.spike_users <= p.base_users:
        raise ProfileConfigError(f"--spike-users {p.spike_users} must be above --base-users {p.base_users}")
    return StagedProfile("spike", p, with_baseline(spike_stages(p), p.baseline_s))


def spike_stages(p: SpikeParams) -> list[Stage]:
    return [
        Stage(0, p.base_users, "steady"),
        Stage(p.settle_s, p.base_users, "steady"),
        Stage(p.jump_s, p.spike_users, "spike"),
        Stage(p.hold_s, p.spike_users, "spike"),
        Stage(p.jump_s, p.base_users, "drop"),
        Stage(p.settle_s, p.base_users, "recovery"),
    ]
