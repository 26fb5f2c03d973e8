"""Streaming summaries with bounded memory for hours-long runs: count/sum/min/max/last exactly, and
quantiles from a log-bucketed sketch (DDSketch-style) whose relative error is at most RELATIVE_ERROR.

Memory is one counter per occupied bucket: about 2,100 buckets cover 1 µs to 10^12 (any ms or byte value
a run produces), whatever the number of values. Pure arithmetic, no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

RELATIVE_ERROR = 0.01  # a reported quantile is within 1 % of a true value at that rank
_GAMMA = (1 + RELATIVE_ERROR) / (1 - RELATIVE_ERROR)
_LOG_GAMMA = math.log(_GAMMA)


@dataclass
class Distribution:
    """A running summary of one metric's values."""

    count: int = 0
    total: float = 0.0
    min: float = math.inf
    max: float = -math.inf
    last: float | None = None
    _buckets: dict[tuple[int, int], int] = field(default_factory=dict)  # (sign, index) -> count

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.min = min(self.min, value)
        self.max = max(self.max, value)
        self.last = value
        key = _bucket(value)
        self._buckets[key] = self._buckets.get(key, 0) + 1

    @property
    def buckets(self) -> int:
        return len(self._buckets)

    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def quantile(self, q: float) -> float | None:
        """The nearest-rank q-quantile (the smallest value with at least q of all values at or below it),
        within RELATIVE_ERROR, clamped to the exact min and max."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for key in sorted(self._buckets, key=_representative):
            seen += self._buckets[key]
            if seen >= rank:
                return min(max(_representative(key), self.min), self.max)
        return self.max


def _bucket(value: float) -> tuple[int, int]:
    """(sign, i) for a value in (gamma^(i-1), gamma^i] in absolute terms; (0, 0) for exact zero."""
    if value == 0:
        return (0, 0)
    return (1 if value > 0 else -1, math.ceil(math.log(abs(value)) / _LOG_GAMMA))


def _representative(key: tuple[int, int]) -> float:
    """The value that splits a bucket's relative error evenly: 2 * gamma^i / (gamma + 1)."""
    sign, i = key
    return sign * 2 * _GAMMA**i / (_GAMMA + 1)
