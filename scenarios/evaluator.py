"""Judge thresholds live: fed request, task and sampler rows as they are written, asked once a tick.

Memory stays bounded (one streaming Distribution per metric in use). It never stops the run itself:
it says which thresholds fail and whether an abort is due; the locustfile acts on that.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from contract.compare import COMPARE
from contract.derived import derived_value, number
from contract.exit_codes import OK, THRESHOLD_FAILED
from contract.schema import TASK_STATUS
from scenarios.metrics import TASK_GOODPUT
from scenarios.quantiles import Distribution
from scenarios.slo import Goodput, Slo
from scenarios.thresholds import Threshold


@dataclass(frozen=True)
class ThresholdResult:
    """A threshold's verdict at one moment. passed is None when there was no data to judge."""

    expr: str
    passed: bool | None
    value: float | None  # the aggregate that was compared (file units)
    samples: int  # values behind it: percentiles carry their sample count
    abort: bool
    grace_s: float
    abort_due: bool  # failing, abort set, and the grace period since the start is over
    failed_ts: float | None  # first evaluation at which it failed (stays set if it recovers)

    def as_json(self) -> dict[str, Any]:
        """The run.json "thresholds" entry."""
        return {
            "expr": self.expr,
            "abort": self.abort,
            "grace_s": self.grace_s,
            "passed": self.passed,
            "value": self.value,
            "samples": self.samples,
            "failed_ts": self.failed_ts,
        }


@dataclass
class _Ratio:
    """Failures over total, for error_rate and task_failure_rate."""

    count: int = 0
    bad: int = 0


class ThresholdEvaluator:
    """Feed rows with observe_*; call evaluate(now) about once a second and at the end of the run."""

    def __init__(self, thresholds: Sequence[Threshold], start_ts: float, slos: Sequence[Slo] = ()) -> None:
        self.thresholds = tuple(thresholds)
        self.start_ts = start_ts
        self.goodput = Goodput(tuple(slos))
        self._dists: dict[str, Distribution] = {}
        self._ratios: dict[str, _Ratio] = {}
        self._values: dict[str, tuple[float | None, int]] = {}  # counters and trends: value, points
        self._failed_ts: dict[int, float] = {}
        for th in self.thresholds:
            m = th.metric
            if m.source == "goodput":
                continue
            if m.rate:
                self._ratios[m.name] = _Ratio()
            elif m.source not in ("counter", "trend"):
                self._dists[m.name] = Distribution()
        metrics = dict.fromkeys(th.metric for th in self.thresholds)  # each once: a value is added once
        self._by_source = {
            src: [m for m in metrics if m.source == src] for src in ("request", "derived", "task", "sample")
        }

    def observe_request(self, row: Mapping[str, Any]) -> None:
        """One requests.csv row (contract.schema.REQUEST_COLUMNS)."""
        self._observe("request", row, lambda r: number(r.get("ok")) == 0)
        for metric in self._by_source["derived"]:
            value = derived_value(metric.name, row)
            if value is not None:
                self._dists[metric.name].add(value)
        self.goodput.observe_request(row)

    def observe_task(self, row: Mapping[str, Any]) -> None:
        """One tasks.csv row (TASK_COLUMNS), written when the task is terminal; not done (failed, ended at
        max_steps, in error) counts as failed; one the run's own stop left unfinished is neither, as a
        request it cut short is not a failure."""
        if row.get("status") != TASK_STATUS.unfinished:
            self._observe("task", row, lambda r: r.get("status") != TASK_STATUS.done)
        self.goodput.observe_task(row)

    def observe_sample(self, row: Mapping[str, Any]) -> None:
        """One samples.csv row (SAMPLE_COLUMNS); empty cells are "not measured" and skipped."""
        self._observe("sample", row, lambda r: False)

    def observe_counter(self, name: str, total: float) -> None:
        """A running total kept elsewhere, e.g. observe_counter("dropped_arrivals", pacer.settle(now))."""
        self._values[name] = (total, 1)

    def observe_trend(self, name: str, value: float | None, points: int) -> None:
        """A trend computed over a whole series (a slope, or a verdict as 1/0); None: not enough data."""
        self._values[name] = (value, points)

    def evaluate(self, now: float) -> list[ThresholdResult]:
        return [self._judge(i, th, now) for i, th in enumerate(self.thresholds)]

    def _observe(
        self, source: str, row: Mapping[str, Any], is_bad: Callable[[Mapping[str, Any]], bool]
    ) -> None:
        for metric in self._by_source[source]:
            if metric.rate:
                if row.get(metric.column) not in (None, ""):
                    ratio = self._ratios[metric.name]
                    ratio.count += 1
                    ratio.bad += is_bad(row)
                continue
            value = number(row.get(metric.column))
            if value is not None:
                self._dists[metric.name].add(value)

    def _judge(self, i: int, th: Threshold, now: float) -> ThresholdResult:
        value, samples = self._aggregate(th)
        passed = None if value is None else COMPARE[th.op](value, th.value)
        if passed is False:
            self._failed_ts.setdefault(i, now)
        abort_due = passed is False and th.abort and now - self.start_ts >= th.grace_s
        return ThresholdResult(
            th.expr, passed, value, samples, th.abort, th.grace_s, abort_due, self._failed_ts.get(i)
        )

    def _aggregate(self, th: Threshold) -> tuple[float | None, int]:
        name = th.metric.name
        if th.metric.source in ("counter", "trend"):
            return self._values.get(name, (None, 0))
        if th.metric.source == "goodput":
            return self.goodput.share(of_tasks=name == TASK_GOODPUT)
        if th.metric.rate:
            r = self._ratios[name]
            return (r.bad / r.count if r.count else None), r.count
        d = self._dists[name]
        return _summary(d, th), d.count


def _summary(d: Distribution, th: Threshold) -> float | None:
    if not d.count:
        return None if th.agg != "count" else 0.0
    q = th.quantile
    if q is not None:
        return d.quantile(q)
    return {"avg": d.mean(), "min": d.min, "max": d.max, "count": float(d.count), "last": d.last}[th.agg]


def exit_code(results: Sequence[ThresholdResult]) -> int:
    """THRESHOLD_FAILED (99) when any threshold failed at the end; no-data thresholds do not fail."""
    return THRESHOLD_FAILED if any(r.passed is False for r in results) else OK
