"""Soak profile: average load held for an hour or more (ramps 5 % of the run), for nightly jobs.

Defaults only; the shape itself lives in plateau.py. Generator saturation is judged elsewhere.
"""

from __future__ import annotations

from scenarios.options import ProfileOptions
from scenarios.plateau import PlateauDefaults, build_plateau
from scenarios.shape import StagedProfile

DEFAULTS = PlateauDefaults(peak_users=10, duration_s=3600.0, ramp_fraction=0.05)


class SoakProfile(StagedProfile):
    """A plateau whose verdict is its trends (memory leak, error drift)."""

    judges_trends = True


def build(opts: ProfileOptions) -> StagedProfile:
    return build_plateau("soak", opts, DEFAULTS, SoakProfile)
