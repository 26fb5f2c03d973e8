"""Values of a workload (file or options), each checked and converted with where it was written: token
counts, durations, whole numbers and distributions; shared by scenarios/workloads/settings.py and the sections
other rooms parse (scenarios/workloads/tool_loop.py).

Pure conversion: a bad value is a WorkloadError naming the flag, or the file, line and key.
"""

from __future__ import annotations

import math

from contract.units import parse_duration
from scenarios.errors import WorkloadError
from scenarios.workloads import distributions
from scenarios.workloads.distributions import Distribution
from scenarios.workloads.workload_file import DISTRIBUTION_KEYS, Value


def distribution_of(fields: dict, section: str, number) -> Distribution | None:
    """The distribution given by a section's keys (distribution, mean, stdev, min, max), each value
    converted by `number`; None when the section gives none."""
    given = {k: fields[(section, k)] for k in DISTRIBUTION_KEYS if (section, k) in fields}
    if not given:
        return None
    values = {k: number(v) for k, v in given.items() if k != "distribution"}
    kind_value = given.get("distribution")
    kind = str(kind_value.value) if kind_value else distributions.default_kind(values.get("stdev"))
    if kind_value is not None and kind not in distributions.KINDS:
        raise WorkloadError(f"{kind_value.where} {kind!r}: unknown; use {', '.join(distributions.KINDS)}")
    if "mean" not in values:
        if kind != "uniform" or "min" not in values or "max" not in values:
            where = next(iter(given.values())).where
            raise WorkloadError(f"{where}: [{section}] needs a mean (or uniform with min and max)")
        values["mean"] = (values["min"] + values["max"]) / 2.0
    where = next(iter(given.values())).place  # the section (a file's) or the flag
    try:
        return Distribution(
            kind, values["mean"], values.get("stdev", 0.0), values.get("min"), values.get("max")
        )
    except ValueError as exc:
        raise WorkloadError(f"{where}: {exc}") from None


def tokens_of(field_: Value) -> float:
    """A token count: a finite number >= 0 (a mean may be fractional)."""
    try:
        value = float(str(field_.value).strip()) if not isinstance(field_.value, bool) else math.nan
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise WorkloadError(f"{field_.where} {field_.value!r}: expected a number of tokens >= 0")
    return value


def seconds_of(field_: Value) -> float:
    """Seconds: a number, or a duration such as 250ms, 2s, 1m."""
    value = field_.value
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        try:
            seconds = parse_duration(str(value))
        except ValueError as exc:
            raise WorkloadError(f"{field_.where}: {exc}") from None
    if not (math.isfinite(seconds) and seconds >= 0):
        raise WorkloadError(f"{field_.where} {value!r}: expected a duration >= 0")
    return seconds


def whole_of(field_: Value | None, default: int) -> int:
    if field_ is None:
        return default
    text = str(field_.value).strip()
    if isinstance(field_.value, bool) or not text.isdigit():
        raise WorkloadError(f"{field_.where} {field_.value!r}: expected a whole number >= 0")
    return int(text)
