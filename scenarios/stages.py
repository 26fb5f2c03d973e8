"""Build any timed profile from an explicit --stages list, and prepend the idle --baseline phase.

Shared by every staged profile so "--stages overrides the shape" behaves the same everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from scenarios.options import ProfileOptions
from scenarios.shape import BASELINE, Stage, StagedProfile, parse_stages


@dataclass(frozen=True)
class StagesParams:
    stages: str  # as the user gave it, e.g. "30s:10,1m:10,10s:0"
    baseline_s: float


def build_from_stages(
    name: str, opts: ProfileOptions, shape: type[StagedProfile] = StagedProfile
) -> StagedProfile:
    """The profile named `name` (of class `shape`), shaped by opts.stages instead of its own parameters."""
    assert opts.stages is not None
    params = StagesParams(opts.stages, opts.baseline_s or 0.0)
    return shape(name, params, with_baseline(parse_stages(opts.stages), params.baseline_s))


def with_baseline(stages: list[Stage], baseline_s: float) -> list[Stage]:
    """Prepend an idle phase (0 users) so the target's resting resources are recorded first."""
    return [Stage(baseline_s, 0, BASELINE), *stages] if baseline_s > 0 else stages
