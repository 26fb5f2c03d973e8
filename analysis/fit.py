"""An ordinary least-squares line with R² and its slope's confidence interval: the fit both memory studies
(capacity, churn) publish their figures from.

Pure math (scipy's linregress and t distribution); it judges nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95  # of the slope interval that projections carry


@dataclass
class Fit:
    """Ordinary least squares y = intercept + slope * x, with R² and the slope's confidence interval."""

    slope: float
    intercept: float
    r2: float
    points: int
    slope_low: float
    slope_high: float
    x_mean: float
    y_mean: float

    def x_at(self, y: float, slope: float | None = None) -> float:
        """The x where the line (through the fit's centroid, with `slope`) reaches y; inf if it never does."""
        b = self.slope if slope is None else slope
        return self.x_mean + (y - self.y_mean) / b if b > 0 else math.inf


def ols(x: np.ndarray, y: np.ndarray, confidence: float = CONFIDENCE) -> Fit | None:
    """The fit, or None with fewer than 3 points or no spread in x (no slope, no interval)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 3 or np.ptp(x) == 0:
        return None
    from scipy import stats as sstats  # ~0.4 s to import: only for a fit, not every report's start

    res = sstats.linregress(x, y)
    half = sstats.t.ppf(0.5 + confidence / 2, x.size - 2) * res.stderr
    r2 = float(res.rvalue**2) if np.ptp(y) > 0 else 1.0
    return Fit(
        float(res.slope),
        float(res.intercept),
        r2,
        int(x.size),
        float(res.slope - half),
        float(res.slope + half),
        float(x.mean()),
        float(y.mean()),
    )
