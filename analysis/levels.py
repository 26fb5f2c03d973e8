"""Load levels in the run's own unit, from its rows: arrivals per second asked (an open model: the rate
run.json's open_model.rate_points gives at each arrival's due time) or running agents (a closed model:
users.csv at each request's send time; without users.csv, the agents active in each time bin). Per
level: requests, errors, latency/TTFT/TPOT percentiles with n, time held, arrivals asked, started,
late and dropped with the level's delivery (analysis/delivery.py), goodput and whether every SLO reached
its attainment. Pure: RunData in, a Levels record out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.arrivals import LATE_MS
from analysis.delivery import Shortfall, judge_open, peak_shortfall
from analysis.goodput import request_verdicts, slos_of
from analysis.knee import load_levels, time_bins
from analysis.model import RunData, per_run
from analysis.scores import SCORE_INPUTS, with_scores
from analysis.stats import small_sample_flag
from contract.derived import TPOT_MS
from contract.schema import ERROR_INTERRUPTED, REQUEST, USER

ARRIVALS_PER_S, AGENTS = "arrivals/s", "agents"
MAX_EXACT_LEVELS = 25  # more distinct asked rates than this (a ramp): grouped into LEVEL_BINS bins
LEVEL_BINS = 20
GRID_S = 0.1  # the time held at each open-model level is read off the rate curve at this step
# An arrival due at a step is the new level's (k6's first arrival of a stage is at its start): the curve
# is read this much later, more than the rounding of a due time rebuilt from start_lateness_ms.
AT_STEP_S = 1e-4
# what the level tables read of requests.csv (a narrow copy of a day's rows costs a fraction of a whole)
LEVEL_COLUMNS = (
    REQUEST.ts,
    REQUEST.operation,
    REQUEST.ok,
    REQUEST.error_kind,
    REQUEST.latency_ms,
    REQUEST.ttft_ms,
    *SCORE_INPUTS,
    REQUEST.start_lateness_ms,
)


@dataclass(frozen=True)
class Levels:
    unit: str  # arrivals/s (open model) or agents (closed model)
    table: pd.DataFrame  # indexed by level, ascending
    source: str  # where each request's level was read, in words


@per_run
def run_levels(run: RunData) -> Levels | None:
    """The run's load levels; None when it has no requests (or no level to put them at)."""
    req = run.requests
    if req is None or req.empty or req["ts"].isna().all():
        return None
    req = judged_requests(run)
    open_model = run.meta.get("open_model")
    if isinstance(open_model, dict) and open_model.get("rate_points"):
        return _open_levels(run, req, open_model)
    if run.users is not None and not run.users.empty:
        return _closed_levels(run, req, run.users)
    bins = time_bins(run)
    if bins is None:
        return None
    legacy = load_levels(bins)  # no users.csv: the agents active in each time bin
    return Levels(AGENTS, legacy, "agents active in each time bin (requests.csv)") if len(legacy) else None


@per_run
def load_shortfall(run: RunData) -> Shortfall | None:
    """Why the run's load was not delivered at its peak (analysis/delivery.py); None when it was, or
    when the run has no levels to judge."""
    levels = run_levels(run)
    if levels is None:
        return None
    return peak_shortfall(levels.table, levels.unit, run.users if levels.unit == AGENTS else None)


def judged_requests(run: RunData) -> pd.DataFrame:
    """Rows with a send time, less those the run's own stop cut short (neither good nor bad); only the
    columns the level tables read, and the SLOs' own."""
    assert run.requests is not None
    keep = dict.fromkeys((*LEVEL_COLUMNS, *(s["column"] for s in slos_of(run))))
    req = run.requests[[c for c in keep if c in run.requests]]
    return req[req["ts"].notna() & (req[REQUEST.error_kind] != ERROR_INTERRUPTED)]


def due_ts(req: pd.DataFrame) -> pd.Series:
    """When each request's arrival was due: its send time less its start lateness (first requests)."""
    return req["ts"] - req[REQUEST.start_lateness_ms].fillna(0) / 1000.0


def asked_rate(open_model: dict, ts: pd.Series | np.ndarray) -> np.ndarray:
    """Arrivals/s asked at each UTC time (NaN outside the curve: a sweep's closed passes, after it)."""
    points = np.asarray(open_model["rate_points"], dtype=float)
    elapsed = np.asarray(ts, dtype=float) - float(open_model.get("start_ts") or 0.0) + AT_STEP_S
    inside = (elapsed >= points[0, 0]) & (elapsed < points[-1, 0])
    return np.where(inside, np.interp(elapsed, points[:, 0], points[:, 1]), np.nan)


def _open_levels(run: RunData, req: pd.DataFrame, open_model: dict) -> Levels | None:
    rate = pd.Series(asked_rate(open_model, due_ts(req)), index=req.index)
    points = np.asarray(open_model["rate_points"], dtype=float)
    grid = float(open_model.get("start_ts") or 0.0) + np.arange(points[0, 0], points[-1, 0], GRID_S)
    held = pd.Series(asked_rate(open_model, grid))
    edges = _edges(pd.concat([rate, held]).dropna())
    level, held_level = _level_of(rate, edges), _level_of(held, edges)
    table = level_table(run, req, level)
    if table.empty:
        return None
    table["seconds"] = held_level.value_counts().reindex(table.index).fillna(0) * GRID_S
    lateness = req[REQUEST.start_lateness_ms]
    sent = lateness.notna().groupby(level).sum().reindex(table.index).fillna(0)
    # each arrival in one of started (on time), late or dropped, as the Arrivals section counts them
    table["late"] = (lateness > LATE_MS).groupby(level).sum().reindex(table.index).fillna(0)
    table["started"] = sent - table["late"]
    table["achieved_per_s"] = sent / table["seconds"].where(table["seconds"] > 0)
    table["dropped"] = _dropped_per_level(run.users, open_model, edges).reindex(table.index).fillna(0)
    judge_open(table)
    source = "arrivals/s asked at each arrival's due time (run.json open_model.rate_points)"
    return Levels(ARRIVALS_PER_S, table, source)


def _closed_levels(run: RunData, req: pd.DataFrame, users: pd.DataFrame) -> Levels | None:
    ticks = users[["ts", "users"]].dropna().sort_values("ts")
    order = req.sort_values("ts")
    at = pd.merge_asof(order[["ts"]], ticks, on="ts", direction="backward")["users"]
    level = pd.Series(at.to_numpy(), index=order.index).reindex(req.index)
    level = level.where(level > 0)
    table = level_table(run, req, level)
    if table.empty:
        return None
    held = pd.Series(np.diff(ticks["ts"].to_numpy(), append=ticks["ts"].iloc[-1]), index=ticks.index)
    table["seconds"] = held.groupby(ticks["users"]).sum().reindex(table.index)
    # the most agents the profile asked while this many ran: a level is its running agents, so the run's
    # delivery is judged at its peak (analysis/delivery.py closed_shortfall)
    asked = users.loc[ticks.index, USER.target_users].groupby(ticks["users"]).max()
    table["asked"] = asked.reindex(table.index)
    return Levels(AGENTS, table, "running agents at each request's send time (users.csv)")


def level_table(run: RunData, req: pd.DataFrame, level: pd.Series) -> pd.DataFrame:
    """One row per level (each request's in `level`; NaN: none): counts, error rate, percentiles of the
    successful requests with their n, goodput and the SLOs that fell short."""
    scored = with_scores(req).assign(level=level).dropna(subset=["level"])
    ok = scored["ok"] == 1
    grouped = scored.groupby("level")
    table = pd.DataFrame({"requests": grouped.size(), "failed": (~ok).groupby(scored["level"]).sum()})
    table["error_pct"] = table["failed"] / table["requests"] * 100
    good = scored[ok].groupby("level")
    table["latency_n"] = good[REQUEST.latency_ms].count()
    counts = table["latency_n"].fillna(0).astype(int)
    table["small_sample"] = counts.map(lambda n: small_sample_flag(n, (50, 95)))
    for column, name in ((REQUEST.latency_ms, "latency"), (REQUEST.ttft_ms, "ttft"), (TPOT_MS, "tpot")):
        table[f"{name}_p50_ms"] = good[column].median()
        table[f"{name}_p95_ms"] = good[column].quantile(0.95)
    slos = slos_of(run)
    if slos:
        _add_goodput(table, scored, slos)
    return table.sort_index()


def _add_goodput(table: pd.DataFrame, scored: pd.DataFrame, slos: list[dict]) -> None:
    """Goodput per level, and the request SLOs that fell short of their attainment there."""
    verdicts = request_verdicts(scored, slos).assign(level=scored["level"])
    judged = verdicts[verdicts["scored"]].groupby("level")
    table["goodput_pct"] = judged["met"].mean() * 100
    short: dict[float, list[str]] = {level: [] for level in table.index}
    for i, slo in enumerate(slos):
        if slo["of"] != "requests":
            continue
        for level, share in judged[f"met_{i}"].mean().items():
            if share < slo["attainment"]:
                need = f"{slo['attainment'] * 100:g}"
                short[level].append(f"{slo['expr']} ({share * 100:.1f} % met, needs {need} %)")
    table["slo_missed"] = pd.Series({level: "; ".join(found) for level, found in short.items()})


def _edges(rates: pd.Series) -> np.ndarray | None:
    """Bin edges for a ramp's many asked rates; None when the distinct rates are few (steps, holds)."""
    if rates.round(6).nunique() <= MAX_EXACT_LEVELS:
        return None
    return np.linspace(rates.min(), rates.max(), LEVEL_BINS + 1)


def _level_of(rate: pd.Series, edges: np.ndarray | None) -> pd.Series:
    """A rate's level: itself (rounded), or its bin's middle when the rates are binned."""
    if edges is None:
        return rate.round(6)
    index = np.clip(np.searchsorted(edges, rate, side="right") - 1, 0, len(edges) - 2)
    middle = (edges[:-1] + edges[1:]) / 2
    return pd.Series(np.where(rate.notna(), middle[index], np.nan), index=rate.index).round(3)


def _dropped_per_level(users: pd.DataFrame | None, open_model: dict, edges: np.ndarray | None) -> pd.Series:
    """Arrivals dropped between two users.csv ticks, put at the level asked at the later tick; those
    counted after the curve's end or after the last tick (run.json's final count) at its last level."""
    cumulative = pd.Series(dtype=float)
    if users is not None and not users.empty and users[USER.arrivals_dropped].notna().any():
        ticks = users[["ts", USER.arrivals_dropped]].dropna().sort_values("ts")
        cumulative = pd.Series(ticks[USER.arrivals_dropped].to_numpy(), index=ticks["ts"].to_numpy())
    total = open_model.get("dropped_arrivals")
    points = np.asarray(open_model["rate_points"], dtype=float)
    end = float(open_model.get("start_ts") or 0.0) + points[-1, 0] - 2 * AT_STEP_S
    if isinstance(total, int | float) and total > (cumulative.max() if len(cumulative) else 0):
        cumulative = pd.concat([cumulative, pd.Series([float(total)], index=[end])])
    if cumulative.empty:
        return cumulative
    new = cumulative.diff().fillna(cumulative.iloc[0])
    level = _level_of(pd.Series(asked_rate(open_model, np.minimum(cumulative.index, end))), edges)
    return pd.Series(new.to_numpy()).groupby(level.to_numpy()).sum()
