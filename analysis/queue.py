"""Queue table from samples.csv: the gateway's queue length and in-progress count over time.

Pure: a RunData in, a DataFrame out. Each reading holds until the next (a step function).
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData
from analysis.stats import step_durations, time_weighted_mean, time_where


def queue_table(run: RunData) -> pd.DataFrame | None:
    """Max, time-weighted mean and time spent queued (queue > 0), for queue length and in-progress."""
    samples = run.samples
    if samples is None or samples.empty:
        return None
    rows = [_series_row(samples, col) for col in ("queue_length", "in_progress")]
    rows = [row for row in rows if row is not None]
    return pd.DataFrame(rows).set_index("series") if rows else None


def _series_row(samples: pd.DataFrame, col: str) -> dict | None:
    measured = samples[samples[col].notna()]
    if measured.empty:
        return None
    busy_s = time_where(measured["ts"], measured[col] > 0)
    span_s = float(step_durations(measured["ts"]).sum())
    return {
        "series": col,
        "readings": len(measured),
        "max": float(measured[col].max()),
        "time_weighted_mean": time_weighted_mean(measured["ts"], measured[col]),
        "time_above_zero_s": busy_s,
        "time_above_zero_pct": busy_s / span_s * 100 if span_s > 0 else float("nan"),
    }
