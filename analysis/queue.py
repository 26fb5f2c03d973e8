"""Queue table from samples.csv: the gateway's queue length and in-progress count over time, and how
old each reading was where the source serves a cached one (a reading older than STALE_INTERVALS sampler
intervals is stale: the gateway has moved on since).

Pure: a RunData in, a DataFrame out. Each reading holds until the next (a step function).
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData
from analysis.stats import step_durations, time_weighted_mean, time_where
from contract.schema import SAMPLE

STALE_INTERVALS = 2


def queue_table(run: RunData) -> pd.DataFrame | None:
    """Max, time-weighted mean and time spent queued (queue > 0), for queue length and in-progress."""
    samples = run.samples
    if samples is None or samples.empty:
        return None
    stale = stale_readings(samples, run.meta)
    rows = [_series_row(samples, col, stale) for col in ("queue_length", "in_progress")]
    rows = [row for row in rows if row is not None]
    return pd.DataFrame(rows).set_index("series") if rows else None


def stale_limit_s(meta: dict) -> float:
    """A reading older than this when read is stale: STALE_INTERVALS sampler intervals (run.json)."""
    sampler = meta.get("sampler")
    interval = sampler.get("interval_s") if isinstance(sampler, dict) else None
    return STALE_INTERVALS * (float(interval) if isinstance(interval, int | float) and interval > 0 else 1.0)


def stale_readings(samples: pd.DataFrame, meta: dict) -> pd.Series:
    """True where the queue figures were older than the stale limit when the sampler read them."""
    if SAMPLE.queue_age_s not in samples:
        return pd.Series(False, index=samples.index)
    return samples[SAMPLE.queue_age_s] > stale_limit_s(meta)


def queue_notes(run: RunData) -> list[str]:
    """The age rule, when the source reported ages."""
    samples = run.samples
    if samples is None or SAMPLE.queue_age_s not in samples or samples[SAMPLE.queue_age_s].isna().all():
        return []
    limit = stale_limit_s(run.meta)
    return [
        "reading age: how old the gateway's figures were when the sampler read them (a cached source); "
        f"stale when older than {STALE_INTERVALS} sampler intervals ({limit:g} s): the series lags the "
        "gateway there"
    ]


def _series_row(samples: pd.DataFrame, col: str, stale: pd.Series) -> dict | None:
    measured = samples[samples[col].notna()]
    if measured.empty:
        return None
    busy_s = time_where(measured["ts"], measured[col] > 0)
    span_s = float(step_durations(measured["ts"]).sum())
    row = {
        "series": col,
        "readings": len(measured),
        "max": float(measured[col].max()),
        "time_weighted_mean": time_weighted_mean(measured["ts"], measured[col]),
        "time_above_zero_s": busy_s,
        "time_above_zero_pct": busy_s / span_s * 100 if span_s > 0 else float("nan"),
    }
    age = measured[SAMPLE.queue_age_s].dropna() if SAMPLE.queue_age_s in measured else pd.Series(dtype=float)
    if len(age):
        row |= {
            "age_p50_s": float(age.median()),
            "age_max_s": float(age.max()),
            "stale_readings": int(stale[measured.index].sum()),
        }
    return row
