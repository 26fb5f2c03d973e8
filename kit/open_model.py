"""run.json's "open_model" and users.csv's arrival counts: what the open model asked (its rate curve
and arrival process) and what its pacing did (arrivals issued and dropped, when the first drop was due),
so analysis reads the asked rate at any moment and the dropped arrivals per load level.

Plain data only: the profile and the pacing compute, this module lays their answers out.
"""

from __future__ import annotations

from agents.pacing import FleetArrivals, OpenModelPacing, SweepPacing, arrival_counts
from scenarios.open_model import OpenModelProfile
from scenarios.profile import Profile
from scenarios.sweep import SweepProfile
from scenarios.trace_replay import TraceReplayProfile

ArrivalPacing = OpenModelPacing | FleetArrivals


def open_model_meta(profile: Profile, start_ts: float) -> dict | None:
    """At start: the arrivals asked for, from `start_ts` (the pacers' start); None for a closed model."""
    if isinstance(profile, TraceReplayProfile):  # the trace's own timing: line k due at start + offset
        return {"start_ts": start_ts, "rate_points": profile.rate_points(), "arrivals": "trace"}
    if not isinstance(profile, (OpenModelProfile, SweepProfile)):
        return None
    p = profile.process
    return {
        "start_ts": start_ts,
        "rate_points": profile.rate_points(),  # [[elapsed s, arrivals/s], ...]; a sweep's fill in as it goes
        "arrivals": p.kind,
        "burstiness": p.burstiness,
        "arrival_seed": p.seed,
    }


def open_model_outcome(meta: dict, profile: Profile, pacing: ArrivalPacing, now: float) -> dict:
    """At the end: the counts added, and a sweep's rate curve as its passes measured it."""
    outcome = meta | arrival_counts(pacing, now)
    if isinstance(profile, SweepProfile):
        outcome["rate_points"] = profile.rate_points()
    return outcome


def arrival_columns(pacing: object, now: float) -> dict:
    """users.csv's arrivals_issued and arrivals_dropped so far (empty cells in a closed model)."""
    if not isinstance(pacing, (OpenModelPacing, FleetArrivals)):
        return {}
    return {"arrivals_issued": pacing.issued, "arrivals_dropped": pacing.dropped(now)}


def sweep_passes(pacing: object) -> list[dict] | None:
    """run.json "sweep": each pass's kind, boundaries, asked rate and measured rate."""
    return pacing.plan.boundaries() if isinstance(pacing, SweepPacing) else None
