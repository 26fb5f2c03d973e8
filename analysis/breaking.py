"""Where a run broke, computed from its history: the load level (running agents) at the first sampler
reading or request that crossed a limit, not the level at which the run happened to be stopped.

Pure: RunData in, a small record out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.model import RunData


@dataclass(frozen=True)
class BreakingLevel:
    ts: float  # when the limit was first crossed
    users: int | None  # running agents then (users.csv), None when the run has no users history
    value: float  # the metric's value at that reading
    metric: str
    limit: float


def breaking_level(run: RunData, metric: str, limit: float, above: bool = True) -> BreakingLevel | None:
    """The first samples.csv reading whose `metric` is >= limit (or <= when `above` is False)."""
    samples = run.samples
    if samples is None or metric not in samples or samples[metric].dropna().empty:
        return None
    series = samples[["ts", metric]].dropna()
    crossed = series[series[metric] >= limit] if above else series[series[metric] <= limit]
    if crossed.empty:
        return None
    first = crossed.iloc[0]
    return BreakingLevel(
        float(first["ts"]), users_at(run, float(first["ts"])), float(first[metric]), metric, limit
    )


def users_at(run: RunData, ts: float) -> int | None:
    """Running agents at `ts`: the last users.csv row at or before it."""
    users = run.users
    if users is None or users.empty:
        return None
    before = users[users["ts"] <= ts]
    if before.empty:
        return None
    value = before["users"].iloc[-1]
    return None if pd.isna(value) else int(value)
