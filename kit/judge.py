"""Thresholds judged live: every written row feeds the evaluator, which is asked once a second; an
abort that is due stops the run. Soak trends (memory slope, leak and drift verdicts) are judged once, at
the end, on the run directory as the report reads it. Also the workers' own CPU, as they report it, for
the load generator's validity (analysis/validity.py).

Judging rules live in scenarios/evaluator.py; this module only feeds and asks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path

from contract import schema
from contract.csv_tail import CsvTail
from contract.errors import InputError
from contract.schema import REQUEST
from contract.trend_rule import TrendData, clock
from kit.settings import KitSettings
from scenarios.evaluator import ThresholdEvaluator, ThresholdResult
from scenarios.metrics import TREND_METRICS
from scenarios.slo import Slo
from scenarios.thresholds import Threshold


class LiveJudge:
    def __init__(
        self,
        thresholds: list[Threshold],
        start_ts: float,
        samples_csv: Path,
        dropped: Callable[[float], int],
        slos: tuple[Slo, ...] = (),
    ):
        """Without thresholds and SLOs there is nothing to judge (no evaluator); SLOs alone keep the
        goodput counted live, for the web UI."""
        self.evaluator = ThresholdEvaluator(thresholds, start_ts, slos) if thresholds or slos else None
        self.samples = CsvTail(samples_csv)
        self.run_dir = samples_csv.parent
        self.trends = {th.metric.name for th in thresholds} & TREND_METRICS
        self.dropped = dropped
        self.worker_cpu: dict[str, list[float]] = {}
        self.results: list[ThresholdResult] = []
        self.samples_note: str | None = None  # why sample-based thresholds cannot be judged
        self.sample_listeners: list[Callable[[str, dict], None]] = []  # hear each sampler row as read
        self.trend_notes: dict[str, str] = {}  # trend thresholds this run could not judge, and why

    @property
    def rules(self) -> tuple[Threshold, ...]:
        """The thresholds judged, in the order of judge()'s results."""
        return self.evaluator.thresholds if self.evaluator is not None else ()

    def samples_stopped(self, note: str) -> None:
        """The sampler died: thresholds on samples are "not judged" from now on, with this reason."""
        self.samples_note = note

    def on_row(self, file_name: str, row: dict) -> None:
        if self.evaluator is None:
            return
        if file_name == schema.REQUESTS_CSV:
            if (
                row.get(REQUEST.error_kind) != schema.ERROR_INTERRUPTED
            ):  # cut by the run's own stop: not the gateway's doing
                self.evaluator.observe_request(row)
        elif file_name == schema.TASKS_CSV:
            self.evaluator.observe_task(row)

    def judge(self, now: float, final: bool = False) -> list[ThresholdResult]:
        """Take in new sampler rows and the dropped-arrival count (and, when `final`, the soak trends),
        then evaluate every threshold."""
        for row in self.samples.new_rows():
            if self.evaluator is not None:
                self.evaluator.observe_sample(row)
            for listener in self.sample_listeners:
                listener(schema.SAMPLES_CSV, row)
        if self.evaluator is None:
            return []
        self.evaluator.observe_counter("dropped_arrivals", self.dropped(now))
        if final and self.trends:
            values, self.trend_notes = final_trends(self.run_dir, self.evaluator.thresholds)
            for name, (value, points) in values.items():
                self.evaluator.observe_trend(name, value, points)
        self.results = [
            dataclasses.replace(r, passed=None, abort_due=False) if self._unjudged(th) else r
            for th, r in zip(self.evaluator.thresholds, self.evaluator.evaluate(now), strict=True)
        ]
        return self.results

    def observe_worker_cpu(self, worker: str, cpu_pct: float) -> None:
        """A Locust worker's own CPU %, as it reported it (kit/fleet.py names it: "worker 1 (pid 4242)")."""
        self.worker_cpu.setdefault(worker, []).append(cpu_pct)

    def as_json(self) -> list[dict]:
        """run.json's "thresholds": each verdict, with a note where a threshold could not be judged."""
        if self.evaluator is None:
            return []
        return [
            r.as_json() | ({"note": self._note(th)} if self._unjudged(th) else {})
            for th, r in zip(self.evaluator.thresholds, self.results, strict=True)
        ]

    def _note(self, threshold: Threshold) -> str | None:
        return self.trend_notes.get(threshold.expr) or self.samples_note

    def unjudged(self) -> list[str]:
        """The thresholds the final judgement left without a verdict (no data, or samples stopped)."""
        return [r.expr for r in self.results if r.passed is None]

    def _unjudged(self, threshold: Threshold) -> bool:
        m = threshold.metric  # sample metrics, and the memory trends made of samples
        on_samples = m.source == "sample" or (m.source == "trend" and m.column in schema.SAMPLE_COLUMNS)
        return (self.samples_note is not None and on_samples) or threshold.expr in self.trend_notes

    def workers_cpu_p90(self) -> dict[str, float]:
        """Each worker's CPU p90 from its reports, for the validity rule (analysis/validity.py); a worker
        with fewer than three reports (one every ~3 s) is not judged."""
        from analysis.validity import MIN_WORKER_READINGS, cpu_p90  # pandas at the end only (as trends)

        return {w: cpu_p90(cpu) for w, cpu in self.worker_cpu.items() if len(cpu) >= MIN_WORKER_READINGS}


def final_trends(
    run_dir: Path, thresholds: tuple[Threshold, ...]
) -> tuple[dict[str, tuple[float | None, int]], dict[str, str]]:
    """Each trend metric's value and point count, from the same functions as the report's soak section
    (None where the verdict is "not enough data"), and the thresholds this run cannot judge: a slope bar
    under the run's detectable slope, a leak (drift) verdict that "cannot tell at this length"."""
    from analysis.load import load_run  # pandas and scipy only at the end of a run (see kit/finish.py)
    from analysis.soak import TREND_INPUTS, soak_trends, undetectable, verdict_note

    memory, errors = soak_trends(load_run(run_dir, only=TREND_INPUTS))  # the trends' columns, not the run

    def judged(trend, value: float) -> tuple[float | None, int]:
        return (None if trend.fit is None else value), trend.points

    values = {
        "target_rss_slope_mib_per_h": judged(memory, memory.slope_per_h),
        "memory_leak": judged(memory, float(memory.verdict == "leak")),
        "error_rate_drift_pp_per_h": judged(errors, errors.slope_per_h),
        "error_drift": judged(errors, float(errors.verdict == "drift")),
    }
    of = {name: (memory if name in SLOPES[:2] else errors) for name in SLOPES}
    notes = {}
    for th in thresholds:
        name = th.metric.name
        if name not in of:
            continue
        slope_bar = name in (SLOPES[0], SLOPES[2]) and th.op in ("<", "<=")
        note = undetectable(of[name], th.value) if slope_bar else verdict_note(of[name])
        if note is not None:
            notes[th.expr] = note
    return values, notes


# the trend thresholds whose verdict needs the run to have been able to see the slope at stake
SLOPES = ("target_rss_slope_mib_per_h", "memory_leak", "error_rate_drift_pp_per_h", "error_drift")


def refuse_short_trends(settings: KitSettings) -> None:
    """Before load: a soak, or a run with a trend threshold, too short for the verdict's data would end
    "not judged"; it is refused (exit 2) with the rule and the shortest run that reaches it."""
    trend_rules = [th.expr for th in settings.thresholds if th.metric.name in TREND_METRICS]
    profile = settings.built_profile
    if not (profile.judges_trends or trend_rules):
        return
    run_s = profile.end_s
    if run_s == math.inf:
        return  # open-ended (the web UI's manual profile): judged at the end, unjudged fails then
    data = TrendData(settings.target.trend_min_duration, settings.target.sample_interval)
    if data.reaches(run_s):
        return
    what = f"the threshold {trend_rules[0]!r}" if trend_rules else "a soak verdict (leak, error drift)"
    raise InputError(
        f"{what} needs {data.rule_text()}; this {settings.profile_name} profile runs {clock(run_s)}: "
        f"give --duration {clock(data.shortest_run_s)} or more, or a smaller --trend-min-duration"
    )
