"""The slope of a soak series and what the series could have shown: a warm-up found and left out of the
slope (a saturating curve or a ramp that flattens, each fitted beside the plain line), the slope's
interval from Newey-West (HAC) errors whose bandwidth is read from the residuals' own autocorrelation,
and the smallest slope the run could have detected. Numbers only: verdict words are analysis/soak.py's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

ALPHA = 0.01  # 1 - confidence of the interval; a warm-up is kept when its fit is better at this level
POWER = 0.95  # a leak at the detectable slope is called a leak this often (under the model)
WARMUP_MAX_SHARE = 0.5  # a warm-up found ends within the first half of the series
# warm-up shapes tried beside the line: a saturating curve exp(-t/tau), tau from 1/50 to 1/2 of the
# span (the best of this grid refined between its neighbours), and a ramp that flattens at a knee at
# these shares of the span (its slope before, the series' own after)
TAU_GRID = np.geomspace(1 / 50, 1 / 2, 12)
KNEE_SHARES = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)


@dataclass(frozen=True)
class SlopeFit:
    """A series' slope per hour after its warm-up, with the HAC error behind its interval."""

    slope: float  # per hour
    se: float  # Newey-West standard error of the slope, per hour
    df: int  # degrees of freedom of its t quantiles: the series' blocks of bandwidth + 1 points, less
    # the model's parameters
    bandwidth: int  # Newey-West lags, from the residuals' lag-1 autocorrelation (Andrews' AR(1) rule)
    warmup_h: float  # hours from the series' first point that the warm-up took (0: none found)
    warmup_shape: str  # "none", "saturating" or "ramp to flat"
    level: float  # the fitted value at the warm-up's end (the fitted line starts there)
    span_h: float

    def critical(self) -> float:
        """The two-sided t quantile of the interval."""
        from scipy import stats

        return float(stats.t.ppf(1 - ALPHA / 2, self.df))

    def interval(self) -> tuple[float, float]:
        half = self.critical() * self.se
        return self.slope - half, self.slope + half

    def detectable(self, floor: float) -> float:
        """The smallest true slope called significant (interval above 0) and at least `floor` with
        probability POWER: max(floor, t * se) + t_power * se."""
        from scipy import stats

        return max(floor, self.critical() * self.se) + float(stats.t.ppf(POWER, self.df)) * self.se

    def span_to_detect(self, bar: float, floor: float) -> float | None:
        """Hours of series after the warm-up whose detectable slope would be `bar`, the error shrinking
        as span^-1.5 (a slope's, for noise correlated over less than the span); None when no length does
        (`bar` at or under `floor`)."""
        from scipy import stats

        if bar <= floor or self.se <= 0:
            return None if bar <= floor else self.span_h
        t, tp = self.critical(), float(stats.t.ppf(POWER, self.df))
        se_needed = min((bar - floor) / tp, bar / (t + tp))
        return self.span_h * (self.se / se_needed) ** (2 / 3)

    def interval_text(self) -> str:
        return (
            f"{100 * (1 - ALPHA):.0f} % Newey-West (HAC) interval, {self.bandwidth} lag(s) from the "
            f"residuals' autocorrelation, t with {self.df} df"
        )

    def warmup_text(self) -> str:
        if self.warmup_shape == "none":
            return "no warm-up found after the first 10 % of the run"
        return (
            f"{self.warmup_shape} warm-up found, its first {60 * self.warmup_h:.1f} min left out of the slope"
        )


def fit_slope(hours: np.ndarray, values: np.ndarray) -> SlopeFit:
    """The slope after the warm-up: the line, or the line plus the warm-up shape that fits best when it
    fits better at the ALPHA level (an F test at the residuals' effective sample size) and rises then
    flattens; either way the slope is the series' own after the warm-up."""
    hours = hours - hours[0]
    span = float(hours[-1]) if hours.size else 0.0
    line = _Model("none", 0.0, np.column_stack([np.ones_like(hours), hours]), values)
    warm = _best_warmup(hours, values, span)
    model = warm if warm is not None and _better(line, warm) else line
    se, bandwidth, df = _hac_slope_se(model.design, model.residuals)
    level = float(model.coef @ model.row_at(model.end))
    return SlopeFit(float(model.coef[1]), se, df, bandwidth, model.end, model.shape, level, span)


class _Model:
    """A least-squares fit of the line plus, maybe, a warm-up column; `end`: where the warm-up ends (h)."""

    def __init__(self, shape: str, end: float, design: np.ndarray, values: np.ndarray, param: float = 0.0):
        self.shape, self.end, self.design, self.param = shape, end, design, param
        self.coef, *_ = np.linalg.lstsq(design, values, rcond=None)
        self.residuals = values - design @ self.coef
        self.sse = float(np.sum(self.residuals**2))

    def row_at(self, hour: float) -> np.ndarray:
        """The design's row at `hour`: 1, the hour, and the warm-up column's value there."""
        if self.shape == "saturating":
            return np.array([1.0, hour, math.exp(-hour / self.param)])
        if self.shape == "ramp to flat":
            return np.array([1.0, hour, min(hour - self.param, 0.0)])
        return np.array([1.0, hour])


def _best_warmup(hours: np.ndarray, values: np.ndarray, span: float) -> _Model | None:
    """The warm-up shape with the least squared error among those that rise then flatten: a saturating
    curve (its coefficient negative) or a ramp flattening at a knee (steeper before it)."""
    if span <= 0 or hours.size < 8:
        return None
    models = [_saturating(hours, values, span, share) for share in TAU_GRID]
    models += [_knee(hours, values, span, share) for share in KNEE_SHARES]
    best = min(range(len(TAU_GRID)), key=lambda i: models[i].sse)
    low, high = TAU_GRID[max(best - 1, 0)], TAU_GRID[min(best + 1, len(TAU_GRID) - 1)]
    models.append(
        _saturating(
            hours, values, span, _refine(lambda s: _saturating(hours, values, span, s).sse, low, high)
        )
    )
    rising = [m for m in models if (m.coef[2] < 0) == (m.shape == "saturating")]
    return min(rising, key=lambda m: m.sse) if rising else None


def _saturating(hours: np.ndarray, values: np.ndarray, span: float, share: float) -> _Model:
    tau = share * span
    design = np.column_stack([np.ones_like(hours), hours, np.exp(-hours / tau)])
    end = min(3 * tau, WARMUP_MAX_SHARE * span)  # 95 % of the rise is done at 3 tau
    return _Model("saturating", end, design, values, tau)


def _knee(hours: np.ndarray, values: np.ndarray, span: float, share: float) -> _Model:
    knee = share * span
    design = np.column_stack([np.ones_like(hours), hours, np.minimum(hours - knee, 0.0)])
    return _Model("ramp to flat", knee, design, values, knee)


def _refine(sse: Callable[[float], float], low: float, high: float) -> float:
    """The share of the span (between low and high) whose curve fits best, searched on its logarithm."""
    from scipy.optimize import minimize_scalar

    found = minimize_scalar(
        lambda x: sse(math.exp(x)), bounds=(math.log(low), math.log(high)), method="bounded"
    )
    return float(math.exp(found.x))


def _better(line: _Model, warm: _Model) -> bool:
    """The warm-up model's gain over the line, an F test counted at the effective sample size of its
    residuals (n (1 - rho) / (1 + rho)): correlated noise does not pass for a shape."""
    from scipy import stats

    n = line.residuals.size
    if warm.sse <= 0:
        return line.sse > 0
    rho = _lag1(warm.residuals)
    n_eff = max(n * (1 - rho) / (1 + rho), 5.0)
    f = (line.sse - warm.sse) / (warm.sse / (n - 3)) * (n_eff / n)
    return bool(f > stats.f.ppf(1 - ALPHA, 1, n_eff - 3))


def _lag1(residuals: np.ndarray) -> float:
    """Lag-1 autocorrelation, kept within (-0.97, 0.97); 0 for a constant series."""
    centred = residuals - residuals.mean()
    denom = float(np.dot(centred, centred))
    if denom <= 0 or residuals.size < 3:
        return 0.0
    return float(np.clip(np.dot(centred[1:], centred[:-1]) / denom, -0.97, 0.97))


def _hac_slope_se(design: np.ndarray, residuals: np.ndarray) -> tuple[float, int, int]:
    """Newey-West (Bartlett) standard error of the slope (column 1), its bandwidth by Andrews' AR(1)
    plug-in (1.1447 (alpha n)^(1/3), alpha = 4 rho^2 / ((1 - rho)^2 (1 + rho)^2)), and t's degrees of
    freedom: the blocks of bandwidth + 1 points the series holds, less the model's parameters."""
    n, k = design.shape
    rho = _lag1(residuals)
    alpha = 4 * rho**2 / ((1 - rho) ** 2 * (1 + rho) ** 2)
    bandwidth = int(min(max(math.ceil(1.1447 * (alpha * n) ** (1 / 3)), 1), n // 2))
    scores = design * residuals[:, None]
    meat = scores.T @ scores
    for lag in range(1, bandwidth + 1):
        weight = 1 - lag / (bandwidth + 1)
        cross = scores[lag:].T @ scores[:-lag]
        meat += weight * (cross + cross.T)
    bread = np.linalg.pinv(design.T @ design)
    variance = bread @ meat @ bread * n / max(n - k, 1)
    df = max(n // (bandwidth + 1) - k, 2)
    return float(math.sqrt(max(variance[1, 1], 0.0))), bandwidth, df
