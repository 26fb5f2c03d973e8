"""Small statistics every table shares: percentiles that carry their sample count, step-function time
averages, and multi-run aggregates. Pure math on arrays and frames: no files, no plotting.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# Fewest samples that support a percentile: the tail beyond it then holds about ten observations.
MIN_SAMPLES: dict[int, int] = {50: 20, 90: 100, 95: 200, 99: 1000}
PERCENTILES: tuple[int, ...] = (50, 90, 95, 99)


def small_sample_flag(count: int, percentiles: tuple[int, ...] = PERCENTILES) -> str:
    """A table cell: empty when every percentile is supported, else which ones are not and why."""
    thin = [p for p in percentiles if count < MIN_SAMPLES[p]]
    return ", ".join(f"p{p} needs ~{MIN_SAMPLES[p]}" for p in thin)


def describe(values: pd.Series, prefix: str = "", percentiles: tuple[int, ...] = PERCENTILES) -> dict:
    """Count, percentiles, max of the non-empty values, plus the small-sample flag, as one table row."""
    clean = values.dropna().to_numpy(dtype=float)
    row: dict = {f"{prefix}n": int(clean.size)}
    quantiles = np.percentile(clean, percentiles) if clean.size else [np.nan] * len(percentiles)
    row.update({f"{prefix}p{p}": float(q) for p, q in zip(percentiles, quantiles, strict=True)})
    row[f"{prefix}max"] = float(clean.max()) if clean.size else np.nan
    row[f"{prefix}small_sample"] = small_sample_flag(int(clean.size), percentiles)
    return row


def step_durations(ts: pd.Series) -> np.ndarray:
    """Seconds each reading holds until the next (the last one holds the median interval)."""
    t = ts.to_numpy(dtype=float)
    if t.size == 0:
        return t
    gaps = np.diff(t)
    last = float(np.median(gaps)) if gaps.size else 0.0
    return np.clip(np.append(gaps, last), 0.0, None)


def time_weighted_mean(ts: pd.Series, values: pd.Series) -> float:
    """Mean of a step function (each reading holds until the next); NaN when nothing was measured."""
    mask = values.notna().to_numpy()
    dt = step_durations(ts[mask])
    if dt.sum() <= 0:
        return float(values[mask].mean()) if mask.any() else np.nan
    return float(np.sum(values[mask].to_numpy(dtype=float) * dt) / dt.sum())


def time_where(ts: pd.Series, condition: pd.Series) -> float:
    """Seconds for which a condition held, each reading counting until the next."""
    dt = step_durations(ts)
    return float(np.sum(dt[condition.fillna(False).to_numpy(dtype=bool)]))


def aggregate(values: pd.Series) -> dict:
    """Median, range and coefficient of variation across runs, with how many runs had a value."""
    clean = values.dropna().astype(float)
    if clean.empty:
        return {"runs": 0, "median": np.nan, "min": np.nan, "max": np.nan, "cv_pct": np.nan}
    mean = clean.mean()
    cv = float(clean.std(ddof=1) / abs(mean) * 100) if clean.size > 1 and mean != 0 else np.nan
    return {
        "runs": int(clean.size),
        "median": float(clean.median()),
        "min": float(clean.min()),
        "max": float(clean.max()),
        "cv_pct": cv,
    }
