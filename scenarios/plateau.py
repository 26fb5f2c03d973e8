"""The ramp-up / plateau / ramp-down shape shared by the average, stress and soak profiles.

Resolves duration, ramp and hold from whichever the user gave; builds stages; holds no clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.shape import Stage, StagedProfile
from scenarios.stages import build_from_stages, with_baseline

_TOLERANCE_S = 1e-6


@dataclass(frozen=True)
class PlateauDefaults:
    """A profile's defaults: k6's shape, scaled to a small gateway."""

    peak_users: int
    duration_s: float  # ramp-up + plateau + ramp-down
    ramp_fraction: float  # each ramp as a fraction of the duration (k6: 5-15 %)


@dataclass(frozen=True)
class PlateauParams:
    peak_users: int
    ramp_s: float  # ramp-up; ramp-down takes the same time
    hold_s: float
    duration_s: float
    baseline_s: float  # idle lead-in with no users, before the ramp-up (not part of duration)


def build_plateau(
    name: str, opts: ProfileOptions, defaults: PlateauDefaults, shape: type[StagedProfile] = StagedProfile
) -> StagedProfile:
    if opts.stages:
        return build_from_stages(name, opts, shape)
    params = resolve_plateau(opts, defaults)
    return shape(name, params, with_baseline(plateau_stages(params), params.baseline_s))


def resolve_plateau(opts: ProfileOptions, defaults: PlateauDefaults) -> PlateauParams:
    ramp_s, hold_s, duration_s = _ramp_hold_duration(opts, defaults)
    return PlateauParams(
        peak_users=opts.peak_users or defaults.peak_users,
        ramp_s=ramp_s,
        hold_s=hold_s,
        duration_s=duration_s,
        baseline_s=opts.baseline_s or 0.0,
    )


def plateau_stages(p: PlateauParams) -> list[Stage]:
    return [
        Stage(p.ramp_s, p.peak_users, "ramp-up"),
        Stage(p.hold_s, p.peak_users, "plateau"),
        Stage(p.ramp_s, 0, "ramp-down"),
    ]


def _ramp_hold_duration(opts: ProfileOptions, d: PlateauDefaults) -> tuple[float, float, float]:
    """Fill in the missing ones of duration = 2 * ramp + hold; the ramp defaults to a fraction of the run."""
    ramp, hold, duration = opts.ramp_s, opts.hold_s, opts.duration_s
    if duration is None:
        if hold is None:
            duration = d.duration_s
        else:
            ramp = d.ramp_fraction * hold / (1 - 2 * d.ramp_fraction) if ramp is None else ramp
            duration = 2 * ramp + hold
    if ramp is None:
        ramp = (duration - hold) / 2 if hold is not None else d.ramp_fraction * duration
    if hold is None:
        hold = duration - 2 * ramp
    if ramp < 0:
        raise ProfileConfigError(f"--hold {hold:g}s is longer than --duration {duration:g}s")
    if hold < 0:
        raise ProfileConfigError(f"--ramp {ramp:g}s: two ramps do not fit in --duration {duration:g}s")
    if abs(2 * ramp + hold - duration) > _TOLERANCE_S:
        raise ProfileConfigError(
            f"--duration {duration:g}s != 2 x --ramp {ramp:g}s + --hold {hold:g}s: give at most two of them"
        )
    return ramp, hold, duration
