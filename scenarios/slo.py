"""Service levels (--slo) and goodput: a bound each request or task is judged on, and the share of them
that met every bound, counted live as rows are written.

Grammar: METRIC [pNN] OP VALUE, e.g. "ttft_ms <= 500", "tpot_ms p95 <= 50", "task_total_ms <= 5m".
The bound applies to every request (task); pNN is the share of them that must meet it for a load level
to be within its SLOs (p95: 95 %; DEFAULT_ATTAINMENT without one), so "ttft_ms p95 <= 400" holds exactly
when the p95 of TTFT, failed requests counted as missing it, is at most 400 ms. Which rows are scored
(the same rule as analysis/goodput.py, which judges the run directory): requests of the operations that
measure every request SLO's metric (a session check has no TTFT), failed ones included as misses, and
not those the run's own stop cut short; every task, which meets its SLOs when it is done, within every
task bound, and none of its requests missed a request bound.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contract.compare import COMPARE
from contract.derived import derived_value, number
from contract.schema import TASK_STATUS
from scenarios.errors import ThresholdConfigError
from scenarios.metrics import GOODPUT, METRICS, TASK_GOODPUT, Metric
from scenarios.thresholds import OPS, Threshold, value_in_unit

DEFAULT_ATTAINMENT = 0.95
_SLO = re.compile(r"\s*(\S+)\s+(?:p(\d{1,2}(?:\.\d+)?)\s+)?(<=|>=|==|!=|<|>)\s*(\S+)\s*")
SLO_SOURCES = ("request", "derived", "task")


@dataclass(frozen=True)
class Slo:
    """One service level: each request (or task) meets it when `metric op value`."""

    expr: str
    metric: Metric
    op: str
    value: float  # in the metric's file unit (ms, count)
    attainment: float  # the share of requests (tasks) that must meet it

    @property
    def of_tasks(self) -> bool:
        return self.metric.source == "task"

    def met(self, value: float | None) -> bool:
        return value is not None and COMPARE[self.op](value, self.value)

    def value_of(self, row: Mapping[str, Any]) -> float | None:
        """The row's value of this SLO's metric (derived ones computed from the row)."""
        if self.metric.source == "derived":
            return derived_value(self.metric.name, row)
        return number(row.get(self.metric.column))

    def as_json(self) -> dict[str, Any]:
        """run.json "slos": what analysis judges the rows on (it does not parse the expression)."""
        return {
            "expr": self.expr,
            "metric": self.metric.name,
            "column": self.metric.column,
            "derived": self.metric.source == "derived",
            "of": "tasks" if self.of_tasks else "requests",
            "op": self.op,
            "value": self.value,
            "unit": self.metric.unit,
            "attainment": self.attainment,
        }


def parse_slo(text: str, where: str) -> Slo:
    """One --slo; a bad one raises ThresholdConfigError with one line, before any load."""
    m = _SLO.fullmatch(text)
    if not m:
        raise ThresholdConfigError(
            f"{where} {text.strip()!r}: expected METRIC [pNN] OP VALUE, e.g. ttft_ms <= 500 or "
            f"tpot_ms p95 <= 50 (OP one of {' '.join(OPS)})"
        )
    name, percentile, op, raw = m.groups()
    metric = METRICS.get(name)
    if metric is None or metric.source not in SLO_SOURCES or metric.rate:
        known = sorted(n for n, k in METRICS.items() if k.source in SLO_SOURCES and not k.rate)
        raise ThresholdConfigError(
            f"{where} {text.strip()!r}: {name!r} is no SLO metric (use {', '.join(known)})"
        )
    attainment = float(percentile) / 100 if percentile else DEFAULT_ATTAINMENT
    if not 0 < attainment <= 1:
        raise ThresholdConfigError(
            f"{where} {text.strip()!r}: p{percentile} is not a share between 0 and 100"
        )
    try:
        value = value_in_unit(metric.unit, raw)
    except ValueError as e:
        raise ThresholdConfigError(
            f"{where} {text.strip()!r}: bad value for {name} ({metric.unit}): {e}"
        ) from None
    expr = f"{name}{f' p{percentile}' if percentile else ''} {op} {raw}"
    return Slo(expr, metric, op, value, attainment)


def check_goodput_thresholds(thresholds: Sequence[Threshold], slos: Sequence[Slo]) -> None:
    """A goodput threshold with nothing to be good against is bad input."""
    for th in thresholds:
        if th.metric.name in (GOODPUT, TASK_GOODPUT) and not slos:
            raise ThresholdConfigError(f"{th.where} {th.expr!r}: goodput needs at least one --slo")


@dataclass
class Goodput:
    """Requests and tasks scored and met so far; memory bounded by the operations and the tasks in
    flight. Feed every requests.csv and tasks.csv row (the run's own cut-short requests excluded)."""

    slos: tuple[Slo, ...]
    requests_scored: int = 0
    requests_met: int = 0
    tasks_scored: int = 0
    tasks_met: int = 0
    _by_operation: dict[str, list[int]] = field(default_factory=dict)  # scored, met, measures (0/1)
    _missed_tasks: set[str] = field(default_factory=set)  # tasks with a request that missed its SLOs

    def observe_request(self, row: Mapping[str, Any]) -> None:
        request_slos = [s for s in self.slos if not s.of_tasks]
        if not request_slos:
            return
        values = [s.value_of(row) for s in request_slos]
        ok = number(row.get("ok")) == 1
        met = ok and all(s.met(v) for s, v in zip(request_slos, values, strict=True))
        counts = self._by_operation.setdefault(str(row.get("operation")), [0, 0, 0])
        counts[0] += 1
        counts[1] += met
        if ok and all(v is not None for v in values):
            counts[2] = 1
        if not met and row.get("task_id"):
            self._missed_tasks.add(str(row["task_id"]))
        measured = [c for c in self._by_operation.values() if c[2]]
        self.requests_scored = sum(c[0] for c in measured)
        self.requests_met = sum(c[1] for c in measured)

    def observe_task(self, row: Mapping[str, Any]) -> None:
        task_slos = [s for s in self.slos if s.of_tasks]
        missed = str(row.get("task_id")) in self._missed_tasks
        self._missed_tasks.discard(str(row.get("task_id")))
        done = row.get("status") == TASK_STATUS.done
        self.tasks_scored += 1
        self.tasks_met += done and not missed and all(s.met(s.value_of(row)) for s in task_slos)

    def share(self, of_tasks: bool = False) -> tuple[float | None, int]:
        """(goodput, rows scored): None while nothing is scored."""
        scored, met = (
            (self.tasks_scored, self.tasks_met) if of_tasks else (self.requests_scored, self.requests_met)
        )
        return (met / scored if scored else None), scored
