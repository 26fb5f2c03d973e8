"""Load-level analysis: latency, TTFT, errors and throughput per number of active users, the knee where
latency or errors turn, and a Little's-law check that flags a load generator that stopped keeping its
users busy (its CPU and host are judged by analysis/validity.py). Pure math.

Users per time bin = agents whose first..last request span overlaps the bin; in-flight = time-average
of outstanding requests in the bin (from send time and latency of every request).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.model import RunData, per_run
from contract import schema
from contract.schema import REQUEST

MIN_LEVELS = 4
LATENCY_RISE = 1.5  # latency knee: the worst level is at least this many times the knee level
ERROR_RISE_PP = 1.0  # error knee: the worst level is at least this many points above the knee level
SATURATION_REMEDY = (
    "a Locust process uses one core: add --processes -1 (a worker per core, README 'Using every core') "
    "or more workers (--worker on other machines, docs/multi-host.md)"
)
BUSY_RATIO_DROP = 0.5  # offered concurrency per user at the top level vs the bottom level


@dataclass
class Knee:
    """Where a curve turns, or why no knee is claimed."""

    measure: str
    users: float | None
    value: float | None
    rule: str


@dataclass
class LittleCheck:
    """Little's law agreement, and whether the load generator kept its users busy."""

    saturated: bool
    in_flight_vs_little: float
    busy_ratio_low: float
    busy_ratio_high: float
    rule: str


R = schema.REQUEST
BIN_COLUMNS = (R.ts, R.agent_id, R.ok, R.error_kind, R.latency_ms, R.ttft_ms)


@per_run
def time_bins(run: RunData, bin_s: float | None = None) -> pd.DataFrame | None:
    """Per time bin: active users, completions/s, latency/TTFT/error stats, measured in-flight."""
    req = run.requests
    if req is None or req.empty or req["ts"].isna().all():
        return None
    req = req[[c for c in BIN_COLUMNS if c in req]]
    req = req[req["ts"].notna()]
    if REQUEST.error_kind in req:  # cut short by the run's own stop: neither a success nor a gateway error
        req = req[req[REQUEST.error_kind] != schema.ERROR_INTERRUPTED]
    if req.empty:  # every request was cut short: no request ended, so no bin has a completion
        return None
    end = req["ts"] + req[REQUEST.latency_ms].fillna(0) / 1000.0
    t0, t1 = float(req["ts"].min()), float(end.max())
    width = bin_s or max(5.0, (t1 - t0) / 200)
    edges = np.arange(t0, t1 + width, width)
    idx = np.clip(((end - t0) // width).astype(int), 0, len(edges) - 2)
    ok = req["ok"] == 1
    grouped = req.assign(
        b=idx, err=(~ok) * 100.0, lat=req[REQUEST.latency_ms].where(ok), ttft=req[REQUEST.ttft_ms].where(ok)
    ).groupby("b")
    bins = pd.DataFrame(
        {
            "requests": grouped.size(),
            "latency_p50_ms": grouped["lat"].median(),
            "latency_p95_ms": grouped["lat"].quantile(0.95),
            "latency_mean_ms": grouped["lat"].mean(),
            "ttft_p50_ms": grouped["ttft"].median(),
            "error_pct": grouped["err"].mean(),
        }
    ).reindex(range(len(edges) - 1))
    bins["start_ts"] = edges[:-1]
    bins["users"] = _active_users(req, edges)
    bins["throughput_rps"] = bins["requests"].fillna(0) / width
    bins["in_flight"] = _in_flight(req["ts"].to_numpy(float), end.to_numpy(float), edges)
    return bins


def _active_users(req: pd.DataFrame, edges: np.ndarray) -> np.ndarray:
    span = req.groupby("agent_id")["ts"].agg(["min", "max"])
    first, last = np.sort(span["min"].to_numpy()), np.sort(span["max"].to_numpy())
    started = np.searchsorted(first, edges[1:], side="right")
    gone = np.searchsorted(last, edges[:-1], side="left")
    return started - gone


def _in_flight(starts: np.ndarray, ends: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-average of outstanding requests per bin: the integral of a +1/-1 step function."""
    times = np.concatenate([starts, ends])
    steps = np.concatenate([np.ones_like(starts), -np.ones_like(ends)])
    order = np.argsort(times, kind="stable")
    times, count = times[order], np.cumsum(steps[order])
    integral = np.concatenate([[0.0], np.cumsum(count[:-1] * np.diff(times))])
    at_edges = np.interp(edges, times, integral)
    return np.diff(at_edges) / np.diff(edges)


def load_levels(bins: pd.DataFrame) -> pd.DataFrame:
    """Bins grouped by active users: the curve knees are found on (users ascending)."""
    used = bins[(bins["users"] > 0) & (bins["requests"] > 0)]
    weights = used.assign(lat_x_n=used["latency_mean_ms"] * used["requests"])
    grouped = weights.groupby("users")
    levels = pd.DataFrame(
        {
            "bins": grouped.size(),
            "requests": grouped["requests"].sum(),
            "throughput_rps": grouped["throughput_rps"].mean(),
            "latency_p50_ms": grouped["latency_p50_ms"].median(),
            "latency_p95_ms": grouped["latency_p95_ms"].median(),
            "ttft_p50_ms": grouped["ttft_p50_ms"].median(),
            "error_pct": grouped["error_pct"].mean(),
            "in_flight": grouped["in_flight"].mean(),
        }
    )
    levels["little_in_flight"] = (
        levels["throughput_rps"] * grouped["lat_x_n"].sum() / levels["requests"] / 1000
    )
    levels["busy_ratio"] = levels["in_flight"] / levels.index.to_numpy(float)
    return levels


def find_knee(x: np.ndarray, y: np.ndarray, measure: str, min_rise: float, relative: bool) -> Knee:
    """Kneedle on a rising curve: the level farthest below the chord, if the curve really rises after."""
    ok = ~np.isnan(y)
    x, y = x[ok], y[ok]
    if x.size < MIN_LEVELS:
        return Knee(measure, None, None, f"no knee claimed: {x.size} load levels, needs >= {MIN_LEVELS}")
    xn = (x - x.min()) / (np.ptp(x) or 1.0)
    yn = (y - y.min()) / (np.ptp(y) or 1.0)
    at = int(np.argmax(xn - yn))
    rise = y.max() / y[at] if relative and y[at] > 0 else y.max() - y[at]
    needed = f"{min_rise:g}x" if relative else f"+{min_rise:g} points"
    if (x.size - at) < 2 or rise < min_rise:
        return Knee(measure, None, None, f"no knee: the curve does not rise {needed} beyond any level")
    return Knee(
        measure,
        float(x[at]),
        float(y[at]),
        f"Kneedle (farthest below the chord), worst level >= {needed} the knee level",
    )


def knees(levels: pd.DataFrame) -> list[Knee]:
    """Latency (p95) and error-rate knees over the load levels."""
    users = levels.index.to_numpy(float)
    return [
        find_knee(users, levels["latency_p95_ms"].to_numpy(float), "latency p95", LATENCY_RISE, True),
        find_knee(users, levels["error_pct"].to_numpy(float), "error rate", ERROR_RISE_PP, False),
    ]


def little_check(levels: pd.DataFrame) -> LittleCheck:
    """In-flight vs throughput x latency, and whether the load generator kept its users busy."""
    agreement = float(levels["in_flight"].sum() / levels["little_in_flight"].sum()) if len(levels) else np.nan
    low = float(levels["busy_ratio"].iloc[0]) if len(levels) else np.nan
    high = float(levels["busy_ratio"].iloc[-1]) if len(levels) else np.nan
    saturated = bool(len(levels) > 1 and high < low * BUSY_RATIO_DROP)
    rule = (
        f"saturated when in-flight per user at the top load level < {BUSY_RATIO_DROP:g}x that at the bottom"
    )
    return LittleCheck(saturated, agreement, low, high, rule)
