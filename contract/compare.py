"""The comparison operators of thresholds and service levels, by the symbol run.json records ("op"):
one table for the live judge (scenarios/) and for the analysis that judges the rows again.
"""

from __future__ import annotations

import operator
from collections.abc import Callable

COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
