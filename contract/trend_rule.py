"""The data a soak verdict (leak, error drift, slope thresholds) needs, in samples and seconds: one rule
read by the option's help, the refusal before load (kit/) and the verdict itself (analysis/soak.py).

Numbers and sentences only; it judges no series (that is analysis/soak.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MIN_POINTS = 20  # samples after the warm-up
# seconds those samples must span (--trend-min-duration): the shortest span at which the leak verdict
# tells every series of the bank of known truth (tests/soak_bank.py: heavy churn, collector sawtooth,
# warm-ups, leaks in steps) at >= 95 %; at 600 s heavy churn and sawtooth "cannot tell" (docs/analysis.md)
MIN_DURATION_S = 1200.0
WARMUP_FRACTION = 0.1  # the first part of the run is left out (caches, pools filling)
MARGIN_INTERVALS = 2  # a run's first and last readings fall up to an interval inside its ends


@dataclass(frozen=True)
class TrendData:
    """What a run of a given length leaves the rule, sampled every `interval_s`."""

    min_duration_s: float
    interval_s: float

    @property
    def shortest_run_s(self) -> float:
        """The shortest run (whole seconds) whose samples after the warm-up reach both minimums."""
        needed = max(self.min_duration_s, MIN_POINTS * self.interval_s) + MARGIN_INTERVALS * self.interval_s
        return float(math.ceil(needed / (1 - WARMUP_FRACTION)))

    def reaches(self, run_s: float) -> bool:
        return run_s >= self.shortest_run_s

    def rule_text(self) -> str:
        """The rule in samples and seconds, as the report and --help state it."""
        return (
            f">= {MIN_POINTS} samples spanning >= {self.min_duration_s:g} s after the first "
            f"{100 * WARMUP_FRACTION:.0f} % of the run (warm-up), sampled every {self.interval_s:g} s: "
            f"a run of >= {clock(self.shortest_run_s)} ({self.shortest_run_s:.0f} s)"
        )


def clock(seconds: float) -> str:
    """600 -> "10m", 669 -> "11m09s", 3600 -> "1h": the form every duration option takes."""
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h"] if hours else []
    if minutes or (hours and secs):
        parts.append(f"{minutes:02d}m" if hours else f"{minutes}m")
    if secs or not parts:
        parts.append(f"{secs:02d}s" if parts else f"{secs}s")
    return "".join(parts)
