"""Stress profile: the average-load shape at twice the average's users.

Defaults only; the shape itself lives in plateau.py.
"""

from __future__ import annotations

from scenarios.options import ProfileOptions
from scenarios.plateau import PlateauDefaults, build_plateau
from scenarios.shape import StagedProfile

DEFAULTS = PlateauDefaults(peak_users=20, duration_s=300.0, ramp_fraction=0.10)


def build(opts: ProfileOptions) -> StagedProfile:
    return build_plateau("stress", opts, DEFAULTS)
