"""Soak verdicts: is the target's memory growing (a leak), is the error rate drifting? A robust slope
(Theil-Sen) with its interval plus a Mann-Kendall trend test, and a verdict naming the rule that made it.

Pure math on a RunData; no plotting, no files.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.hosts import judged_samples
from analysis.model import RunData, per_run
from contract import schema, trend_rule
from contract.schema import MIB, SAMPLE

MAX_POINTS = 720  # Theil-Sen is O(n^2): longer series are reduced to this many bin medians
ALPHA = 0.01  # trend-test significance and 1 - confidence of the slope interval
BLOCKS = 10  # consecutive runs of the series whose own slopes give the blocked interval


@dataclass
class SoakRule:
    """Thresholds of a verdict; defaults suit memory in MiB/h. Stated in the report beside the verdict."""

    min_points: int = trend_rule.MIN_POINTS
    min_duration_s: float = trend_rule.MIN_DURATION_S
    warmup_fraction: float = trend_rule.WARMUP_FRACTION  # the first part of the run is excluded
    min_slope_per_h: float = 2.0  # smaller slopes are no practical leak, however significant
    # ... nor are slopes under this share of the series' median per hour: a 186 MiB Python gateway
    # creeping 1.25 MiB/h (allocator growth) is significant over 30 min yet no leak (docs/analysis.md)
    min_relative_per_h: float = 0.01


@dataclass
class Trend:
    """A series' trend and the verdict on it."""

    measure: str
    unit: str
    points: int
    duration_s: float
    slope_per_h: float
    slope_low_per_h: float
    slope_high_per_h: float
    mk_tau: float
    mk_p: float
    verdict: str
    rule: str


def trend(
    ts: np.ndarray,
    values: np.ndarray,
    measure: str,
    unit: str,
    rule: SoakRule,
    positive_word: str,
    negative_word: str,
) -> Trend:
    """Fit a Theil-Sen slope per hour and a Mann-Kendall test, then judge it against `rule`."""
    ok = ~np.isnan(values)
    ts, values = ts[ok], values[ok]
    duration = float(ts[-1] - ts[0]) if ts.size else 0.0
    if ts.size < rule.min_points or duration < rule.min_duration_s:
        why = (
            f"needs >= {rule.min_points} points over >= {rule.min_duration_s:g} s after the "
            f"{100 * rule.warmup_fraction:.0f} % warm-up; had {ts.size} over {duration:.0f} s"
        )
        nan = float("nan")
        return Trend(measure, unit, int(ts.size), duration, nan, nan, nan, nan, nan, "not enough data", why)
    from scipy import stats  # ~0.4 s to import: only for a series long enough to judge

    hours, values = _reduce((ts - ts[0]) / 3600.0, values)
    slope, _, low, high = stats.theilslopes(values, hours, alpha=1 - ALPHA)
    low, high = _honest_interval(hours, values, low, high)
    tau, p = stats.kendalltau(hours, values)
    significant = p < ALPHA and tau > 0 and low > 0
    floor = max(rule.min_slope_per_h, rule.min_relative_per_h * float(np.median(values)))
    verdict = positive_word if significant and slope >= floor else negative_word
    relative = f" or {100 * rule.min_relative_per_h:g} % of the median" if rule.min_relative_per_h else ""
    why = (
        f"{positive_word} when Mann-Kendall p < {ALPHA} with tau > 0, the {100 * (1 - ALPHA):.0f} % "
        f"Theil-Sen interval excludes 0 and the slope >= {floor:.3g} {unit}/h "
        f"(the larger of {rule.min_slope_per_h:g} {unit}/h{relative})"
    )
    return Trend(
        measure,
        unit,
        int(ts.size),
        duration,
        float(slope),
        float(low),
        float(high),
        float(tau),
        float(p),
        verdict,
        why,
    )


def _honest_interval(hours: np.ndarray, values: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """The Theil-Sen interval widened to the blocked one where that is wider. Theil-Sen's assumes
    independent residuals; memory that grows in steps (1 MiB allocations) has a staircase of residuals,
    each correlated with its neighbours, and steps that come when the work does: its 99 % interval
    [121.7, 128.2] MiB/h excluded the true 120. The series cut into BLOCKS runs, one OLS slope each: their
    spread is the slope's own run-to-run spread (quantization and uneven steps included), and its t
    interval over the blocks is honest where the pairs' is not. Only for a quantized series (one that
    holds its value between steps): for continuous noise the pairs' interval is the right one."""
    if not _quantized(values):
        return low, high
    edges = np.linspace(hours[0], hours[-1], BLOCKS + 1)
    slopes = []
    for start, end in zip(edges[:-1], edges[1:], strict=True):
        inside = (hours >= start) & (hours <= end)
        if inside.sum() >= 3 and np.ptp(hours[inside]) > 0:
            slopes.append(np.polyfit(hours[inside], values[inside], 1)[0])
    if len(slopes) < 3:
        return low, high
    from scipy import stats  # as in trend()

    half = stats.t.ppf(1 - ALPHA / 2, len(slopes) - 1) * np.std(slopes, ddof=1) / np.sqrt(len(slopes))
    centre = float(np.mean(slopes))
    return min(low, centre - half), max(high, centre + half)


def _quantized(values: np.ndarray) -> bool:
    """At least half of the successive readings repeat the one before exactly."""
    return values.size > 1 and float(np.mean(np.diff(values) == 0)) >= 0.5


def _reduce(hours: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bin medians when the series is long, so the O(n^2) slope stays fast; short series pass through."""
    if hours.size <= MAX_POINTS:
        return hours, values
    bins = np.minimum((hours / hours[-1] * MAX_POINTS).astype(int), MAX_POINTS - 1)
    frame = pd.DataFrame({"b": bins, "h": hours, "v": values}).groupby("b").median()
    return frame["h"].to_numpy(), frame["v"].to_numpy()


def _after_warmup(frame: pd.DataFrame, rule: SoakRule) -> pd.DataFrame:
    if frame.empty:
        return frame
    start, end = frame["ts"].iloc[0], frame["ts"].iloc[-1]
    return frame[frame["ts"] >= start + (end - start) * rule.warmup_fraction]


def memory_trend(run: RunData, rule: SoakRule | None = None) -> Trend:
    """Target RSS growth in MiB/h after warm-up: leak / no evidence of leak / not enough data."""
    rule = rule or SoakRule()
    s = judged_samples(run)  # one target: the first sampler service's host when there are several
    frame = (
        pd.DataFrame(columns=["ts", SAMPLE.target_rss_bytes])
        if s is None
        else s[["ts", SAMPLE.target_rss_bytes]]
    )
    frame = _after_warmup(frame.dropna(), rule)
    return trend(
        frame["ts"].to_numpy(float),
        frame[SAMPLE.target_rss_bytes].to_numpy(float) / MIB,
        "target RSS",
        "MiB",
        rule,
        "leak",
        "no evidence of leak",
    )


def error_rate_trend(run: RunData, rule: SoakRule | None = None, bin_requests: int = 50) -> Trend:
    """Error-rate drift in percentage points per hour over bins of `bin_requests` requests."""
    rule = rule or SoakRule(min_slope_per_h=1.0, min_relative_per_h=0.0)
    req = run.requests
    if req is None or req.empty:
        return trend(np.array([]), np.array([]), "error rate", "pp", rule, "drift", "no evidence of drift")
    frame = _after_warmup(req[["ts", "ok"]].dropna().sort_values("ts"), rule)
    n_bins = max(len(frame) // bin_requests, 1)
    bins = np.arange(len(frame)) * n_bins // max(len(frame), 1)
    grouped = frame.assign(b=bins, err=(frame["ok"] == 0) * 100.0).groupby("b")
    return trend(
        grouped["ts"].median().to_numpy(float),
        grouped["err"].mean().to_numpy(float),
        "error rate",
        "pp",
        rule,
        "drift",
        "no evidence of drift",
    )


def rule_of(meta: dict) -> SoakRule:
    """The memory rule a run was judged with: run.json's trend_min_duration_s (--trend-min-duration)."""
    value = meta.get("trend_min_duration_s")
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return SoakRule(min_duration_s=float(value))
    return SoakRule()


def data_rule(meta: dict) -> str:
    """The verdicts' data rule in samples and seconds, at the run's --trend-min-duration and interval."""
    sampler = meta.get("sampler")
    interval = sampler.get("interval_s") if isinstance(sampler, dict) else None
    interval = float(interval) if isinstance(interval, int | float) and interval > 0 else 1.0
    data = trend_rule.TrendData(rule_of(meta).min_duration_s, interval)
    return f"Data rule: a verdict needs {data.rule_text()}; shorter soaks are refused before load."


# What the trends read: the kit judges trend thresholds on these alone (load_run's `only`), not the run
TREND_INPUTS = {
    schema.SAMPLES_CSV: (schema.SAMPLE.ts, schema.SAMPLE.target_rss_bytes, schema.SAMPLE.host),
    schema.REQUESTS_CSV: (schema.REQUEST.ts, schema.REQUEST.ok),
}


@per_run
def soak_trends(run: RunData) -> tuple[Trend, Trend]:
    """Memory and error-rate trends under the run's rule: what the report shows and thresholds judge."""
    rule = rule_of(run.meta)
    errors = SoakRule(min_duration_s=rule.min_duration_s, min_slope_per_h=1.0, min_relative_per_h=0.0)
    return memory_trend(run, rule), error_rate_trend(run, errors)


def soak_table(trends: list[Trend]) -> pd.DataFrame:
    """The trends as one table, one row per measure (the rules go in the section's notes)."""
    return pd.DataFrame([t.__dict__ for t in trends]).drop(columns="rule").set_index("measure")
