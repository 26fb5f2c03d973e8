"""Average-load profile: ramp up (10 % of the run), plateau at the expected load, ramp down.

Defaults only; the shape itself lives in plateau.py, shared with stress and soak.
"""

from __future__ import annotations

from scenarios.options import ProfileOptions
from scenarios.plateau import PlateauDefaults, build_plateau
from scenarios.shape import StagedProfile

DEFAULTS = PlateauDefaults(peak_users=10, duration_s=300.0, ramp_fraction=0.10)


def build(opts: ProfileOptions) -> StagedProfile:
    return build_plateau("average", opts, DEFAULTS)
