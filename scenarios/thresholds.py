"""Parse thresholds (NFRs) from --threshold strings and a TOML file, k6 style, before any load starts.

Grammar: METRIC [AGG] OP VALUE [abort] [grace=DURATION], e.g. "ttft_ms p95 < 500 abort grace=10s".
Every problem raises ThresholdConfigError with one line: where, which column, what is wrong.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contract.compare import COMPARE
from contract.textfile import read_text
from contract.units import parse_duration, parse_size
from scenarios.errors import ThresholdConfigError
from scenarios.metrics import DISTRIBUTION_AGGS, METRICS, Metric

OPS = tuple(COMPARE)
MAX_THRESHOLDS = 100  # per run (file and --threshold together): each is judged every second
_TOKEN = re.compile(r"grace=\S*|<=|>=|==|!=|<|>|[^\s<>=!]+|\S")
_PERCENTILE = re.compile(r"p(\d{1,2}(?:\.\d+)?)")
_MS_SUFFIX = {"ms": 1.0, "s": 1000.0, "m": 60000.0}
_FILE_KEYS = {"expr", "abort", "grace"}


@dataclass(frozen=True)
class Threshold:
    """One NFR: `metric agg op value`, with k6's abortOnFail (abort) and delayAbortEval (grace_s)."""

    expr: str  # as written, without the abort/grace flags
    metric: Metric
    agg: str  # "p95", "avg", "min", "max", "count", "last", "rate" or "value" (a trend)
    op: str
    value: float  # in the metric's file unit (ms, bytes, percent, fraction, count)
    abort: bool = False
    grace_s: float = 0.0
    where: str = ""  # "--threshold #2" or "thresholds.toml [[threshold]] #1"

    @property
    def quantile(self) -> float | None:
        m = _PERCENTILE.fullmatch(self.agg)
        return float(m.group(1)) / 100 if m else None

    @property
    def value_unit(self) -> str:
        """The unit of the aggregate it compares: a count of rows is a count whatever its metric."""
        return "count" if self.agg == "count" else self.metric.unit


def parse_threshold(text: str, where: str) -> Threshold:
    """One threshold from a string, flags included."""
    tokens = [(m.group(), m.start() + 1) for m in _TOKEN.finditer(text)]
    flags = [t for t in tokens if t[0] == "abort" or t[0].startswith("grace=")]
    expr_tokens = [t for t in tokens if t not in flags]
    abort, grace_s = _flags(flags, text, where)
    return _parse_expr(expr_tokens, text, where, abort, grace_s)


def load_thresholds_file(path: str | Path) -> list[Threshold]:
    """Thresholds from a TOML file of [[threshold]] tables (expr, abort, grace); see examples/."""
    return parse_thresholds_toml(read_text(path, ThresholdConfigError, "thresholds file"), str(path))


def parse_thresholds_toml(text: str, name: str) -> list[Threshold]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ThresholdConfigError(f"{name}: not valid TOML: {e}") from None
    unknown = set(doc) - {"threshold"}
    if unknown:
        raise ThresholdConfigError(f"{name}: unknown table {sorted(unknown)[0]!r} (expected [[threshold]])")
    entries = doc.get("threshold", [])
    if not isinstance(entries, list):
        raise ThresholdConfigError(f"{name}: write each threshold as a [[threshold]] table")
    return [_from_table(e, f"{name} [[threshold]] #{i}") for i, e in enumerate(entries, 1)]


def _table(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ThresholdConfigError(f"{where}: expected a table (expr, abort, grace), got {entry!r}")
    return entry


def _from_table(raw: Any, where: str) -> Threshold:
    entry = _table(raw, where)
    extra = set(entry) - _FILE_KEYS
    if extra:
        raise ThresholdConfigError(f"{where}: unknown key {sorted(extra)[0]!r} (keys: expr, abort, grace)")
    expr, abort, grace = entry.get("expr"), entry.get("abort", False), entry.get("grace", "0s")
    if not isinstance(expr, str):
        raise ThresholdConfigError(f'{where}: missing expr = "METRIC [AGG] OP VALUE"')
    if not isinstance(abort, bool):
        raise ThresholdConfigError(f"{where}: abort must be true or false, got {abort!r}")
    grace_s = _grace(str(grace), where)
    tokens = [(m.group(), m.start() + 1) for m in _TOKEN.finditer(expr)]
    return _parse_expr(tokens, expr, where, abort, grace_s)


def _flags(flags: list[tuple[str, int]], text: str, where: str) -> tuple[bool, float]:
    abort, grace_s = False, 0.0
    for token, col in flags:
        if token == "abort":
            abort = True
        else:
            grace_s = _grace(token.removeprefix("grace="), f"{where} {text!r} column {col}")
    return abort, grace_s


def _grace(text: str, where: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as e:
        raise ThresholdConfigError(f"{where}: grace {e}") from None


def _parse_expr(
    tokens: list[tuple[str, int]], text: str, where: str, abort: bool, grace_s: float
) -> Threshold:
    def fail(col: int, problem: str) -> ThresholdConfigError:
        return ThresholdConfigError(f"{where} {text.strip()!r} column {col}: {problem}")

    if not tokens:
        raise fail(1, "empty; expected METRIC [AGG] OP VALUE, e.g. ttft_ms p95 < 500")
    name, col = tokens[0]
    metric = METRICS.get(name)
    if metric is None:
        raise fail(col, f"unknown metric {name!r} (known: {', '.join(sorted(METRICS))})")
    has_agg = len(tokens) > 1 and tokens[1][0] not in OPS
    agg = _aggregation(metric, tokens[1] if has_agg else None, fail)
    rest = tokens[2:] if has_agg else tokens[1:]
    if not rest or rest[0][0] not in OPS:
        got = f"{rest[0][0]!r}" if rest else "nothing"
        raise fail(rest[0][1] if rest else len(text) + 1, f"expected an operator {' '.join(OPS)}, got {got}")
    if len(rest) != 2:
        raise fail(
            rest[-1][1] if len(rest) > 2 else len(text) + 1, "expected exactly one value after the operator"
        )
    value = _value(metric, rest[1], fail)
    if metric.source == "trend" and abort:
        raise fail(1, f"{metric.name} is judged once, at the end of the run: 'abort' does not apply")
    expr = " ".join(t for t, _ in tokens)
    return Threshold(expr, metric, agg, rest[0][0], value, abort, grace_s, where)


def _aggregation(metric: Metric, token: tuple[str, int] | None, fail: Any) -> str:
    if metric.rate or metric.source in ("counter", "trend"):
        implied = "rate" if metric.rate else ("value" if metric.source == "trend" else "count")
        if token is not None and token[0] != implied:
            raise fail(token[1], f"{metric.name} takes no aggregation but {implied!r}, got {token[0]!r}")
        return implied
    if token is None:
        raise fail(
            len(metric.name) + 1, f"{metric.name} needs an aggregation: pNN, avg, min, max, count, last"
        )
    agg, col = token
    m = _PERCENTILE.fullmatch(agg)
    if agg in DISTRIBUTION_AGGS or (m and 0 < float(m.group(1)) < 100):
        return agg
    raise fail(col, f"unknown aggregation {agg!r} (use p50, p95, p99.9, avg, min, max, count, last)")


def _value(metric: Metric, token: tuple[str, int], fail: Any) -> float:
    text, col = token
    try:
        return value_in_unit(metric.unit, text)
    except ValueError as e:
        raise fail(col, f"bad value for {metric.name} ({metric.unit}): {e}") from None


def value_in_unit(unit: str, text: str) -> float:
    """The value in the file unit: "5s" -> 5000 for ms, "1GiB" -> bytes, "1%" -> 0.01 for a ratio."""
    if unit == "bytes":
        return parse_size(text)
    if unit == "ms":
        m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m)?", text)
        if not m:
            raise ValueError(f"{text!r} is not a time (use 500, 500ms, 5s, 2m)")
        return float(m.group(1)) * _MS_SUFFIX[m.group(2) or "ms"]
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(%)?", text)
    if not m or (m.group(2) and unit not in ("ratio", "pct")):
        raise ValueError(f"{text!r} is not a number")
    return float(m.group(1)) / (100 if m.group(2) and unit == "ratio" else 1)
