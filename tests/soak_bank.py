"""A bank of target-memory series with known truth, the shapes memory really makes (linear leaks, leaks in
1 MiB steps with churn, saturating warm-ups, garbage-collector sawtooth, step-then-flat plateaus, heavy
churn, quantized readings), each seeded, at the shortest soak the kit allows, 30 min, 1 h and 8 h; and
the leak verdict's confusion table on it. `python -m tests.soak_bank` prints the table docs/analysis.md
quotes; tests/analysis/test_soak_bank.py scores it and checks that the docs show this very table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.soak import CANNOT_TELL, SoakRule, Trend, rss_trend
from contract.trend_rule import MIN_DURATION_S, TrendData, clock

INTERVAL_S = 1.0  # the sampler's default
MINIMUM_S = TrendData(MIN_DURATION_S, INTERVAL_S).shortest_run_s
# half the minimum, judged as if --trend-min-duration allowed it: the row that shows why the minimum is
SHORT_S = TrendData(MIN_DURATION_S / 2, INTERVAL_S).shortest_run_s
LENGTHS_S = (SHORT_S, MINIMUM_S, 1800.0, 3600.0, 8 * 3600.0)
JUDGED = tuple(clock(s) for s in LENGTHS_S if s >= MINIMUM_S)  # what the bar applies to
SEEDS = range(6)
BASE_MIB = 150.0
PAGE_MIB = 4 / 1024  # RSS moves in 4 KiB pages

Shape = Callable[[np.ndarray, np.random.Generator], np.ndarray]  # seconds -> MiB above BASE_MIB


@dataclass(frozen=True)
class Series:
    kind: str
    leak_mib_per_h: float  # the truth: 0 for every non-leaking shape
    shape: Shape


def _noise(t: np.ndarray, rng: np.random.Generator, sd: float = 0.05) -> np.ndarray:
    return rng.normal(0, sd, t.size)


def _linear(rate: float) -> Shape:
    return lambda t, rng: rate * t / 3600 + _noise(t, rng, 0.3)


def _churn(t: np.ndarray, rng: np.random.Generator, top_mib: float, every_s: float = 5.0) -> np.ndarray:
    """0..top MiB held and freed, redrawn every `every_s`: what a worker's requests hold at any moment."""
    held = rng.uniform(0, top_mib, int(t[-1] // every_s) + 2)
    return np.floor(held[(t // every_s).astype(int)])  # in whole 1 MiB blocks


def _steps(rate: float, step_mib: float = 1.0) -> Shape:
    """A leak of 1 MiB blocks at gamma-spaced times (work comes unevenly), with 0-3 MiB of churn."""

    def shape(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        gap = 3600 * step_mib / rate
        times = np.cumsum(rng.gamma(4.0, gap / 4.0, int(2 * t[-1] / gap) + 10))
        return np.searchsorted(times, t, side="right") * step_mib + _churn(t, rng, 3.0)

    return shape


def _warmup(rise_mib: float, tau_s: float, leak: float = 0.0) -> Shape:
    """A saturating rise (imports, caches, pools filling), as an idle Python gateway makes."""
    return lambda t, rng: rise_mib * (1 - np.exp(-t / tau_s)) + leak * t / 3600 + _noise(t, rng)


def _sawtooth(period_s: float, grow_mib: float, leak: float = 0.0) -> Shape:
    """A collector's sawtooth: grows `grow_mib` over each period, then gives it back."""
    return lambda t, rng: grow_mib * ((t + rng.uniform(0, period_s)) % period_s) / period_s + leak * t / 3600


def _plateau(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An allocator growing its arenas in 4 MiB steps over the first fifth of the run, then holding."""
    times = np.sort(rng.uniform(0, 0.2 * t[-1], 6))
    return 4.0 * np.searchsorted(times, t, side="right") + _noise(t, rng)


def _flat_churn(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return _churn(t, rng, 8.0) + _noise(t, rng, 0.5)


def _flat_quantized(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return np.round(rng.normal(0, 0.4, t.size))  # a reading that holds 1 MiB resolution


BANK = (
    Series("linear leak 5 MiB/h", 5.0, _linear(5.0)),
    Series("linear leak 30 MiB/h", 30.0, _linear(30.0)),
    Series("linear leak 600 MiB/h", 600.0, _linear(600.0)),
    Series("1 MiB steps + churn, 30 MiB/h", 30.0, _steps(30.0)),
    Series("1 MiB steps + churn, 120 MiB/h", 120.0, _steps(120.0)),
    Series("warm-up + leak 20 MiB/h", 20.0, _warmup(3.0, 150.0, leak=20.0)),
    Series("sawtooth + leak 60 MiB/h", 60.0, _sawtooth(90.0, 6.0, leak=60.0)),
    Series("saturating warm-up 3 MiB, tau 2.5 min", 0.0, _warmup(3.0, 150.0)),
    Series("saturating warm-up 40 MiB, tau 5 min", 0.0, _warmup(40.0, 300.0)),
    Series("GC sawtooth 6 MiB / 90 s", 0.0, _sawtooth(90.0, 6.0)),
    Series("step-then-flat plateau", 0.0, _plateau),
    Series("flat, heavy churn (0-8 MiB)", 0.0, _flat_churn),
    Series("flat, quantized to 1 MiB", 0.0, _flat_quantized),
)


def reading(series: Series, length_s: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One seeded series as a sampler would record it: seconds from 0, MiB in whole pages."""
    rng = np.random.default_rng(seed)
    t = np.arange(0.0, length_s + INTERVAL_S, INTERVAL_S)
    mib = BASE_MIB + series.shape(t, rng)
    return t, np.round(mib / PAGE_MIB) * PAGE_MIB


def outcome(series: Series, verdict: Trend) -> str:
    """right, wrong ("false leak", "missed leak": no evidence on a leak above the detectable slope), or
    the verdict's own "cannot tell" / a leak under the detectable slope passed as no evidence."""
    if verdict.verdict == "leak":
        return "right" if series.leak_mib_per_h else "false leak"
    if verdict.verdict == CANNOT_TELL:
        return "cannot tell"
    if not series.leak_mib_per_h:
        return "right"
    return "missed leak" if series.leak_mib_per_h >= verdict.detectable_per_h else "under detectable"


def score() -> pd.DataFrame:
    """One row per series, length and seed: truth, verdict, slope, detectable slope, outcome."""
    rows = []
    for series in BANK:
        for length in LENGTHS_S:
            for seed in SEEDS:
                rule = SoakRule(min_duration_s=MIN_DURATION_S if length >= MINIMUM_S else MIN_DURATION_S / 2)
                t = rss_trend(*reading(series, length, seed), rule)
                rows.append(
                    {
                        "series": series.kind,
                        "length": clock(length),
                        "leaks": bool(series.leak_mib_per_h),
                        "verdict": t.verdict,
                        "slope": t.slope_per_h,
                        "detectable": t.detectable_per_h,
                        "outcome": outcome(series, t),
                    }
                )
    return pd.DataFrame(rows)


def confusion_table(scored: pd.DataFrame) -> str:
    """The Markdown table docs/analysis.md quotes: per length, truth by verdict, and the share right."""
    lines = [
        "| length | series | leaking: leak / no evidence / cannot tell | not leaking: leak / no evidence / "
        "cannot tell | right | detectable slope (MiB/h, median) |",
        "|---|---|---|---|---|---|",
    ]
    for length, rows in scored.groupby("length", sort=False):
        cells = []
        for leaks in (True, False):
            part = rows[rows["leaks"] == leaks]["verdict"]
            counts = [int((part == v).sum()) for v in ("leak", "no evidence of leak", CANNOT_TELL)]
            cells.append(" / ".join(map(str, counts)))
        right = (rows["outcome"] == "right").mean()
        below = "" if length in JUDGED else " (below the minimum)"
        lines.append(
            f"| {length}{below} | {len(rows)} | {cells[0]} | {cells[1]} | {100 * right:.1f} % | "
            f"{rows['detectable'].median():.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    scored = score()
    print(confusion_table(scored))
    wrong = scored[~scored["outcome"].isin(["right"])]
    if len(wrong):
        print()
        print(wrong.to_string(index=False))
