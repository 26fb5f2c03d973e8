"""The soak verdict drawn: the target's memory over the run with the warm-up left out shaded (the fixed
first tenth, then any warm-up the fit found), the fitted line after it, and the slope's interval and the
run's detectable slope in the legend, so a reader sees why the verdict is what it is.

Draws and saves only; every number comes from analysis/soak.py.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from analysis.hosts import judged_samples
from analysis.model import RunData
from analysis.soak import Trend, soak_trends
from contract.schema import MIB, SAMPLE

MAX_POINTS = 5000  # longer series are thinned for drawing only


def soak_plot(run: RunData, out: Path) -> Path | None:
    """soak.png; None when the memory verdict had no fit (no samples, or not enough data)."""
    memory = soak_trends(run)[0]
    s = judged_samples(run)
    if memory.fit is None or s is None or s.empty:
        return None
    s = s[["ts", SAMPLE.target_rss_bytes]].dropna()
    s = s.iloc[:: max(1, len(s) // MAX_POINTS)]
    t0 = float(s["ts"].iloc[0])
    minutes = (s["ts"] - t0) / 60
    fig, ax = plt.subplots(figsize=(9, 3.6))
    ax.plot(minutes, s[SAMPLE.target_rss_bytes] / MIB, lw=0.8, color="#4477aa", label="target RSS")
    judged_from = (memory.start_ts - t0) / 60
    fit_from = judged_from + memory.warmup_s / 60
    ax.axvspan(0, judged_from, color="#bbbbbb", alpha=0.4, label="warm-up left out: first 10 % of the run")
    if memory.warmup_s > 0:
        ax.axvspan(
            judged_from,
            fit_from,
            color="#ddaa33",
            alpha=0.3,
            label=f"{memory.fit.warmup_shape} warm-up found",
        )
    end = float(minutes.iloc[-1])
    level = memory.fit.level
    ax.plot(
        [fit_from, end],
        [level, level + memory.slope_per_h * (end - fit_from) / 60],
        color="#cc3311",
        lw=1.6,
        label=_fit_label(memory),
    )
    ax.set_xlabel("minutes from the first reading")
    ax.set_ylabel("target RSS (MiB)")
    ax.set_title(f"Memory: {memory.verdict}", fontsize=10)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = out / "soak.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _fit_label(t: Trend) -> str:
    lags = f"Newey-West, {t.fit.bandwidth} lags" if t.fit is not None else "Newey-West"
    return (
        f"fit: {t.slope_per_h:,.1f} MiB/h, 99 % interval {t.slope_low_per_h:,.1f} to "
        f"{t.slope_high_per_h:,.1f} ({lags}); detectable {t.detectable_per_h:,.1f} MiB/h"
    )
