"""Soak verdicts: is the target's memory growing (a leak), is the error rate drifting? The slope after a
warm-up found in the data, its Newey-West interval, the smallest slope the run could have detected, and
one of three verdicts naming the rule that made it (analysis/trend_fit.py does the numbers).

Pure math on a RunData; no plotting, no files.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.hosts import judged_samples
from analysis.model import RunData, per_run
from analysis.trend_fit import POWER, SlopeFit, fit_slope
from contract import schema, trend_rule
from contract.schema import MIB, SAMPLE

MAX_POINTS = 720  # longer series are reduced to this many bin medians (the fit's cost, the HAC lags)
CANNOT_TELL = "cannot tell at this length"
NOT_ENOUGH = "not enough data"


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
    # "no evidence" only from a run that could have seen a leak of this size (the larger of the two, and
    # at least twice the floor): a run whose detectable slope is larger "cannot tell at this length"
    judge_up_to_per_h: float = 10.0
    judge_up_to_relative_per_h: float = 0.02


def error_rule(min_duration_s: float = trend_rule.MIN_DURATION_S) -> SoakRule:
    """The error-rate drift rule: a drift of >= 1 percentage point/h, "no evidence" from a run that could
    see 10 (a 22-minute soak at ~4 requests/s and 1 % errors detects ~6: binomial noise of 50-request
    bins)."""
    return SoakRule(
        min_duration_s=min_duration_s,
        min_slope_per_h=1.0,
        min_relative_per_h=0.0,
        judge_up_to_per_h=10.0,
        judge_up_to_relative_per_h=0.0,
    )


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
    detectable_per_h: float = float("nan")  # the smallest slope this run would have judged a leak (drift)
    warmup_s: float = float("nan")  # seconds from the series' first reading left out of the slope
    fit: SlopeFit | None = field(default=None, repr=False)  # the fit behind the slope (None: not judged)
    start_ts: float = float("nan")  # the judged series' first reading (after the fixed warm-up)
    floor_per_h: float = float("nan")  # the least slope the rule calls a leak (drift)
    bar_per_h: float = float("nan")  # the leak (drift) a run must be able to see to say "no evidence"

    def span_to_detect_s(self, bar_per_h: float) -> float | None:
        """Seconds of judged series that would detect a slope of `bar_per_h` (None: no length would)."""
        if self.fit is None:
            return None
        hours = self.fit.span_to_detect(bar_per_h, self.floor_per_h)
        return None if hours is None else 3600 * hours


def trend(
    ts: np.ndarray,
    values: np.ndarray,
    measure: str,
    unit: str,
    rule: SoakRule,
    positive_word: str,
    negative_word: str,
    duration_s: float | None = None,
) -> Trend:
    """The slope per hour after a warm-up found in the series, its HAC interval and detectable slope, a
    Mann-Kendall test beside them, and the verdict under `rule`. `duration_s`: the span the series
    covers when it is made of bins (their medians sit inside it), else its first to last reading."""
    ok = ~np.isnan(values)
    ts, values = ts[ok], values[ok]
    duration = duration_s if duration_s is not None else float(ts[-1] - ts[0]) if ts.size else 0.0
    if ts.size < rule.min_points or duration < rule.min_duration_s:
        why = (
            f"needs >= {rule.min_points} points over >= {rule.min_duration_s:g} s after the "
            f"{100 * rule.warmup_fraction:.0f} % warm-up; had {ts.size} over {duration:.0f} s"
        )
        nan = float("nan")
        return Trend(measure, unit, int(ts.size), duration, nan, nan, nan, nan, nan, NOT_ENOUGH, why)
    from scipy import stats  # ~0.4 s to import: only for a series long enough to judge

    hours, values = _reduce((ts - ts[0]) / 3600.0, values)
    fit = fit_slope(hours, values)
    low, high = fit.interval()
    after = hours >= hours[0] + fit.warmup_h
    tau, p = stats.kendalltau(hours[after], values[after])
    median = float(np.median(values))
    floor = max(rule.min_slope_per_h, rule.min_relative_per_h * median)
    bar = max(rule.judge_up_to_per_h, rule.judge_up_to_relative_per_h * median, 2 * floor)
    detectable = fit.detectable(floor)
    if low > 0 and fit.slope >= floor:
        verdict = positive_word
    else:
        verdict = CANNOT_TELL if detectable > bar else negative_word
    return Trend(
        measure,
        unit,
        int(ts.size),
        duration,
        fit.slope,
        low,
        high,
        float(tau),
        float(p),
        verdict,
        _rule_text(fit, unit, floor, bar, positive_word, negative_word),
        detectable,
        3600 * fit.warmup_h,
        fit,
        float(ts[0]),
        floor,
        bar,
    )


def undetectable(
    t: Trend, bar_per_h: float, warmup_fraction: float = trend_rule.WARMUP_FRACTION
) -> str | None:
    """Why a slope of `bar_per_h` cannot be judged from this run (it could not have detected it, and its
    interval is not wholly above it), with the soak that could; None when it can (or when the trend has
    no fit: "not enough data" says why)."""
    if t.fit is None or t.detectable_per_h <= bar_per_h or t.slope_low_per_h > bar_per_h:
        return None
    span = t.span_to_detect_s(bar_per_h)
    if span is None:
        longer = f"no length would: under the rule's least {t.unit}/h it calls a trend ({t.floor_per_h:.3g})"
    else:
        run_s = 60 * np.ceil((span + t.warmup_s) / (1 - warmup_fraction) / 60)
        longer = f"a soak of about {trend_rule.clock(run_s)} would, at this run's noise"
    return (
        f"this run could detect a {t.measure} slope of {t.detectable_per_h:.3g} {t.unit}/h or more, "
        f"not {bar_per_h:.3g}: {longer}"
    )


def verdict_note(t: Trend) -> str | None:
    """For "cannot tell at this length": what it could not tell and the soak that could."""
    return undetectable(t, t.bar_per_h) if t.verdict == CANNOT_TELL else None


def _rule_text(fit: SlopeFit, unit: str, floor: float, bar: float, positive: str, negative: str) -> str:
    return (
        f"slope after the warm-up ({fit.warmup_text()}), {fit.interval_text()}: {positive} when the "
        f"interval is above 0 and the slope >= {floor:.3g} {unit}/h; else {negative} when the run could "
        f"detect {bar:.3g} {unit}/h (detectable slope: the least called {positive} {100 * POWER:.0f} % of "
        f"the time at this run's noise and length, {fit.detectable(floor):.3g} {unit}/h), else {CANNOT_TELL}"
    )


def _reduce(hours: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bin medians when the series is long, so the O(n^2) slope stays fast; short series pass through."""
    if hours.size <= MAX_POINTS:
        return hours, values
    bins = np.minimum((hours / hours[-1] * MAX_POINTS).astype(int), MAX_POINTS - 1)
    frame = pd.DataFrame({"b": bins, "h": hours, "v": values}).groupby("b").median()
    return frame["h"].to_numpy(), frame["v"].to_numpy()


Window = tuple[float, float]  # the run's observed span (s): warm-up and duration are measured in it


def _after_warmup(
    frame: pd.DataFrame, rule: SoakRule, window: Window | None, to_end: bool = False
) -> tuple[pd.DataFrame, float]:
    """The rows after the fixed warm-up (the first warmup_fraction of the window) and the seconds they
    span from that cut: to their last row, or with `to_end` to the window's end (requests thin out as
    a soak ramps down its users; the error rate is the run's over its whole length)."""
    if frame.empty:
        return frame, 0.0
    start, end = window if window is not None else (frame["ts"].iloc[0], frame["ts"].iloc[-1])
    cut = start + (end - start) * rule.warmup_fraction
    kept = frame[frame["ts"] >= cut]
    last = end if to_end else (kept["ts"].iloc[-1] if len(kept) else cut)
    return kept, float(last - cut) if len(kept) else 0.0


def memory_trend(run: RunData, rule: SoakRule | None = None, window: Window | None = None) -> Trend:
    """Target RSS growth in MiB/h after warm-up: leak / no evidence of leak / cannot tell at this
    length / not enough data."""
    frame = _memory_frame(run)
    return rss_trend(
        frame["ts"].to_numpy(float), frame[SAMPLE.target_rss_bytes].to_numpy(float) / MIB, rule, window
    )


def rss_trend(
    ts: np.ndarray, mib: np.ndarray, rule: SoakRule | None = None, window: Window | None = None
) -> Trend:
    """The memory verdict on a series of readings (s, MiB), as memory_trend reads a run's."""
    rule = rule or SoakRule()
    frame, duration = _after_warmup(pd.DataFrame({"ts": ts, "mib": mib}), rule, window)
    return trend(
        frame["ts"].to_numpy(float),
        frame["mib"].to_numpy(float),
        "target RSS",
        "MiB",
        rule,
        "leak",
        "no evidence of leak",
        duration,
    )


def _memory_frame(run: RunData) -> pd.DataFrame:
    s = judged_samples(run)  # one target: the first sampler service's host when there are several
    if s is None:
        return pd.DataFrame(columns=["ts", SAMPLE.target_rss_bytes])
    return s[["ts", SAMPLE.target_rss_bytes]].dropna()


def _request_frame(run: RunData) -> pd.DataFrame:
    req = run.requests
    if req is None or req.empty:
        return pd.DataFrame(columns=["ts", "ok"])
    return req[["ts", "ok"]].dropna().sort_values("ts")


def error_rate_trend(
    run: RunData, rule: SoakRule | None = None, bin_requests: int = 50, window: Window | None = None
) -> Trend:
    """Error-rate drift in percentage points per hour over bins of `bin_requests` requests."""
    rule = rule or error_rule()
    frame, duration = _after_warmup(_request_frame(run), rule, window, to_end=True)
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
        duration,
    )


def run_window(run: RunData) -> Window | None:
    """From the first reading or request to the last of either: the span both verdicts measure in."""
    ends = [
        (float(f["ts"].iloc[0]), float(f["ts"].iloc[-1]))
        for f in (_memory_frame(run), _request_frame(run))
        if len(f)
    ]
    if not ends:
        return None
    return min(e[0] for e in ends), max(e[1] for e in ends)


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
    errors = error_rule(rule.min_duration_s)
    window = run_window(run)
    return memory_trend(run, rule, window=window), error_rate_trend(run, errors, window=window)


def soak_table(trends: list[Trend]) -> pd.DataFrame:
    """The trends as one table, one row per measure (the rules go in the section's notes)."""
    rows = [{k: v for k, v in t.__dict__.items() if k not in ("rule", "fit", "start_ts")} for t in trends]
    return pd.DataFrame(rows).set_index("measure")
