"""The distributions a workload draws from: token sizes and think times, fixed, normal, lognormal or
uniform, each clipped to [low, high]; their quantiles, so the report can set what was asked beside what
came back.

Pure: a draw takes the caller's random.Random; nothing here reads an option or a file, and a bad value
is a ValueError whose message the caller prefixes with where it was written.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from statistics import NormalDist

KINDS = ("fixed", "normal", "lognormal", "uniform")
_SQRT3 = math.sqrt(3.0)
_UNIT = NormalDist()


@dataclass(frozen=True)
class Distribution:
    """`mean` and `stdev` are those of the values drawn (lognormal: of the values, not of their log);
    uniform spans mean ± stdev·√3, or [low, high] when no stdev is given. Draws are clipped to
    [low, high] (low defaults to 0: no size or time is negative)."""

    kind: str
    mean: float
    stdev: float = 0.0
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"distribution {self.kind!r}: unknown; use {', '.join(KINDS)}")
        for name in ("mean", "stdev", "low", "high"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{_NAMES[name]} {value!r}: must be a finite number >= 0")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError(f"min {self.low:g} is above max {self.high:g}")
        if self.kind == "lognormal" and (self.mean <= 0 or self.stdev <= 0):
            raise ValueError("lognormal needs a mean > 0 and a stdev > 0")
        if self.kind == "normal" and self.stdev <= 0:
            raise ValueError("normal needs a stdev > 0")
        if self.kind == "uniform" and self.stdev <= 0 and (self.low is None or self.high is None):
            raise ValueError("uniform needs a stdev, or both min and max")

    def draw(self, rng: random.Random) -> float:
        return self.clip(self._raw(rng))

    def quantile(self, q: float) -> float:
        """The q-quantile (0 < q < 1) of the clipped distribution."""
        if self.kind == "fixed":
            return self.clip(self.mean)
        if self.kind == "normal":
            return self.clip(self.mean + self.stdev * _UNIT.inv_cdf(q))
        if self.kind == "lognormal":
            mu, sigma = self._log_params()
            return self.clip(math.exp(mu + sigma * _UNIT.inv_cdf(q)))
        a, b = self._uniform_span()
        return self.clip(a + q * (b - a))

    def clip(self, value: float) -> float:
        low = self.low if self.low is not None else 0.0
        high = self.high if self.high is not None else math.inf
        return min(max(value, low), high)

    def describe(self, unit: str = "") -> str:
        """One line for the report and run.json, e.g. "lognormal mean 2000, stdev 500, clipped to 0..8000"."""

        def num(value: float | None) -> str:
            return "" if value is None else f"{value:g}{unit}"

        if self.kind == "uniform" and self.stdev <= 0:
            return f"uniform {num(self.low)}..{num(self.high)}"
        text = f"fixed {num(self.mean)}" if self.kind == "fixed" else f"{self.kind} mean {num(self.mean)}"
        text += f", stdev {num(self.stdev)}" if self.stdev > 0 else ""
        if self.low is not None or self.high is not None:
            text += f", clipped to {num(self.low or 0.0)}..{num(self.high)}"
        return text

    def _raw(self, rng: random.Random) -> float:
        if self.kind == "fixed":
            return self.mean
        if self.kind == "normal":
            return rng.gauss(self.mean, self.stdev)
        if self.kind == "lognormal":
            return rng.lognormvariate(*self._log_params())
        return rng.uniform(*self._uniform_span())

    def _log_params(self) -> tuple[float, float]:
        """mu, sigma of the underlying normal for the asked mean and stdev of the values."""
        sigma2 = math.log(1.0 + (self.stdev / self.mean) ** 2)
        return math.log(self.mean) - sigma2 / 2.0, math.sqrt(sigma2)

    def _uniform_span(self) -> tuple[float, float]:
        if self.stdev > 0:
            return self.mean - self.stdev * _SQRT3, self.mean + self.stdev * _SQRT3
        assert self.low is not None and self.high is not None  # checked in __post_init__
        return self.low, self.high


_NAMES = {"mean": "mean", "stdev": "stdev", "low": "min", "high": "max"}


def fixed(value: float) -> Distribution:
    return Distribution("fixed", value)


def between(low: float, high: float) -> Distribution:
    """Uniform over [low, high] (the `1s..3s` form)."""
    return Distribution("uniform", (low + high) / 2.0, low=low, high=high)


def default_kind(stdev: float | None) -> str:
    """With no kind named: fixed without a spread, normal with one (AIPerf's and GuideLLM's default)."""
    return "normal" if stdev else "fixed"
