"""Where a run broke, computed from its history, not from where it happened to be stopped: the first
load level (in the run's own unit: arrivals/s or agents) whose error rate is above the limit or where a
service level fell short of its attainment; and, for limits on the sampler's readings (a memory budget),
the load level at the first reading that crossed it.

Pure: RunData or Levels in, a small record out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.delivery import delivered
from analysis.levels import Levels
from analysis.model import RunData

ERROR_LIMIT_PCT = 5.0
MIN_LEVEL_REQUESTS = 10  # a level with fewer requests is too thin to break on (one error in 3 is 33 %)
RULE = (
    f"the first delivered load level (of >= {MIN_LEVEL_REQUESTS} requests) whose error rate is above "
    f"{ERROR_LIMIT_PCT:g} % or where a --slo fell short of its attainment"
)


@dataclass(frozen=True)
class Break:
    """The level where the run broke, in its unit, and what broke there."""

    level: float
    unit: str
    why: str  # "error rate 12.4 % > 5 %" or the SLOs that fell short
    error_pct: float
    rule: str = RULE


def judged_levels(levels: Levels) -> pd.DataFrame:
    """The levels a verdict may read: enough requests, and delivered (a level the load generator did not
    deliver was neither held nor broken by the gateway)."""
    table = levels.table
    return table[(table["requests"] >= MIN_LEVEL_REQUESTS) & delivered(table)]


def first_break(levels: Levels) -> Break | None:
    """The first judged level (ascending) that breaks the rule; None when none does."""
    for level, row in judged_levels(levels).iterrows():
        reasons = []
        if row["error_pct"] > ERROR_LIMIT_PCT:
            reasons.append(f"error rate {row['error_pct']:.1f} % > {ERROR_LIMIT_PCT:g} %")
        if isinstance(row.get("slo_missed"), str) and row["slo_missed"]:
            reasons.append(f"SLO missed: {row['slo_missed']}")
        if reasons:
            return Break(float(level), levels.unit, "; ".join(reasons), float(row["error_pct"]))
    return None


def highest_held(levels: Levels) -> float | None:
    """The highest level that was judged (enough requests, delivered) and did not break: what held."""
    judged = judged_levels(levels)
    broke = first_break(levels)
    below = judged[judged.index < broke.level] if broke else judged
    return float(below.index.max()) if len(below) else None


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
