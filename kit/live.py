"""One run's live picture for the web UI cockpit: time series of users, resources, TTFT, TPOT, latency
and goodput, threshold states and the capacity fit so far, as one JSON-ready snapshot (also the source
of the /metrics text).

Reads only what the run writes (samples.csv, capacity.csv, rows as the recorder writes them) and the live
judge's results; it never touches the target and never decides anything about the run.
"""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from contract import schema
from contract.csv_tail import CsvTail
from contract.derived import DERIVED_METRICS, TPOT_MS, derived_value
from contract.schema import CAPACITY, CAPACITY_EVENT, REQUEST, SAMPLE, USER
from contract.units import show, show_field
from kit.judge import LiveJudge

KEEP_POINTS = 3600  # per series: an hour at 1 Hz, as Locust's own chart history (kit.runtime)
WINDOW_S = 2.0  # TTFT, TPOT and latency percentiles per window of this many seconds (by send time)
# requests.csv columns (and TPOT, derived from a row: contract/derived.py) with percentiles per window
WINDOWED = (REQUEST.ttft_ms, TPOT_MS, REQUEST.latency_ms)
GOODPUT = "goodput"  # the share of scored requests that met every --slo so far, as the live judge counts
GOODPUT_EVERY_S = 1.0  # a goodput point at most this often
QUANTILES = ((50, 0.50), (95, 0.95), (99, 0.99))
CAPACITY_EVENTS = (CAPACITY_EVENT.baseline, CAPACITY_EVENT.ready)
# the run's states, as the cockpit shows them; "running" is the only one with load going
READY, RUNNING, WRITING_REPORT, FINISHED = "ready", "running", "writing the report", "finished"


@dataclass(frozen=True)
class Gauge:
    column: str  # samples.csv column
    label: str
    scale: float  # divide the file's value by this for display
    unit: str
    worst: str  # "max" or "min": which extreme the Resources tab keeps


GAUGES = (
    Gauge(SAMPLE.target_rss_bytes, "target RSS", schema.MIB, "MiB", "max"),
    Gauge(SAMPLE.target_pss_bytes, "target PSS", schema.MIB, "MiB", "max"),
    Gauge(SAMPLE.target_procs, "target processes", 1, "", "max"),
    Gauge(SAMPLE.target_cpu_pct, "target CPU", 1, "% of a core", "max"),
    Gauge(SAMPLE.host_available_bytes, "host available memory", schema.MIB, "MiB", "min"),
    Gauge(SAMPLE.host_swap_used_bytes, "host swap used", schema.MIB, "MiB", "max"),
    Gauge(SAMPLE.host_cpu_pct, "host CPU", 1, "%", "max"),
    Gauge(SAMPLE.load1, "load average (1 min)", 1, "", "max"),
    Gauge("queue_length", "gateway queue length", 1, "", "max"),
    Gauge("in_progress", "gateway in progress", 1, "", "max"),
    Gauge(SAMPLE.loadgen_cpu_pct, "load generator CPU", 1, "% of a core", "max"),
)
_SCALE = {g.column: g.scale for g in GAUGES} | {GOODPUT: 0.01}  # goodput: a share, charted in %


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    unit: str
    series: tuple[tuple[str, str], ...]  # (series name, column: samples.csv or a live series)


CHARTS = (
    Chart("users", "users", "", (("users", "users"), ("target", USER.target_users))),
    Chart(
        "memory", "target memory", "MiB", (("RSS", SAMPLE.target_rss_bytes), ("PSS", SAMPLE.target_pss_bytes))
    ),
    Chart("host_memory", "host available memory", "MiB", (("available", SAMPLE.host_available_bytes),)),
    Chart("swap", "host swap used", "MiB", (("swap", SAMPLE.host_swap_used_bytes),)),
    Chart(
        "cpu",
        "CPU",
        "%",
        (
            ("host", SAMPLE.host_cpu_pct),
            ("target", SAMPLE.target_cpu_pct),
            ("load generator", SAMPLE.loadgen_cpu_pct),
        ),
    ),
    Chart("queue", "gateway queue", "", (("queue", "queue_length"), ("in progress", "in_progress"))),
    Chart("ttft", "TTFT", "ms", (("p50", "ttft_p50_ms"), ("p95", "ttft_p95_ms"))),
    Chart("tpot", "TPOT (time per output token)", "ms", (("p50", "tpot_p50_ms"), ("p95", "tpot_p95_ms"))),
    Chart("latency", "request latency", "ms", (("p50", "latency_p50_ms"), ("p95", "latency_p95_ms"))),
    Chart(GOODPUT, "goodput (met every SLO)", "%", (("requests", GOODPUT),)),
)
# capacity and churn: one Locust user (the driver) opens the agents, so the users chart counts those
AGENTS_CHART = Chart("users", "agents (sessions open)", "", (("agents", "agents_open"),))
_THRESHOLD_CHART = {REQUEST.ttft_ms: "ttft", TPOT_MS: "tpot", REQUEST.latency_ms: "latency"} | {
    col: c.key for c in CHARTS for _, col in c.series
}


@dataclass
class LiveRun:
    """Fed by the run (rows, users, judge); asked by the web UI for snapshot()."""

    run_id: str
    run_dir: Path
    meta: dict  # the run's run.json content, kept up to date by the run
    budget_bytes: float | None = None  # drawn on the memory chart when the profile has a budget
    state: str = READY
    edit_note: str = ""
    params: dict | None = None  # the profile's parameters now (EDIT changes them); None: run.json's
    judge: LiveJudge | None = None
    aborted_expr: str | None = None
    series: dict[str, deque] = field(default_factory=dict)
    requests: int = 0
    errors: int = 0
    _windows: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    _window_stats: dict[tuple[str, int], tuple[int, tuple[float, ...]]] = field(default_factory=dict)
    _samples: CsvTail = field(init=False)
    _capacity: CsvTail = field(init=False)
    _capacity_points: list[tuple[float, float]] = field(default_factory=list)
    _latest: dict[str, float] = field(default_factory=dict)
    _worst: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._samples = CsvTail(self.run_dir / schema.SAMPLES_CSV)
        self._capacity = CsvTail(self.run_dir / schema.CAPACITY_CSV)

    # ---- what the run feeds --------------------------------------------------------------------------
    def on_row(self, file_name: str, row: dict) -> None:
        """A recorder listener: every requests.csv row, for the counts and the percentile windows. A
        request the run's own stop cut short is counted, not as an error (the gateway did not fail it)."""
        if file_name != schema.REQUESTS_CSV:
            return
        self.requests += 1
        if _number(row.get("ok")) == 0 and row.get(REQUEST.error_kind) != schema.ERROR_INTERRUPTED:
            self.errors += 1
        window = int(float(row["ts"]) // WINDOW_S)
        for column in WINDOWED:
            value = derived_value(column, row) if column in DERIVED_METRICS else _number(row.get(column))
            if value is not None:
                self._windows.setdefault(column, {}).setdefault(window, []).append(value)

    def on_users(self, ts: float, users: int, target_users: int) -> None:
        self._add("users", ts, users)
        self._add(USER.target_users, ts, target_users)

    # ---- what the web UI asks ------------------------------------------------------------------------
    def update(self) -> None:
        self._note_goodput(time.time())
        for row in self._samples.new_rows():
            ts = _number(row.get("ts"))
            for gauge in GAUGES:
                value = _number(row.get(gauge.column))
                if value is None or ts is None:
                    continue
                self._add(gauge.column, ts, value)
                pick = max if gauge.worst == "max" else min
                self._worst[gauge.column] = pick(value, self._worst.get(gauge.column, value))
        for row in self._capacity.new_rows():
            ts, n, rss = _number(row.get("ts")), _number(row.get("n")), _number(row.get(CAPACITY.rss_bytes))
            if ts is not None and n is not None:
                self._add("agents_open", ts, n)
            if row.get("event") in CAPACITY_EVENTS and n is not None and rss is not None:
                self._capacity_points.append((n, rss / schema.MIB))

    @property
    def active(self) -> bool:
        """Load is going: started and not yet finished."""
        return self.state == RUNNING

    @property
    def ended(self) -> bool:
        """The run has finished (its report may still be being written): its live values are final."""
        return self.state in (WRITING_REPORT, FINISHED)

    def latest(self) -> dict[str, float]:
        """The newest value of every series, in file units (bytes, ms, %); percentiles of the newest
        window, with the window's sample count (`ttft_window_samples`)."""
        self.update()
        found = {name: points[-1][1] for name, points in self.series.items() if points}
        for name, points in self._window_series(newest_only=True).items():
            if points:
                found[name] = points[-1][1]
        found["requests_total"] = float(self.requests)
        found["errors_total"] = float(self.errors)
        return found

    def snapshot(self, now: float | None = None) -> dict:
        """Everything the cockpit draws, JSON-ready. Charts in display units (MiB, ms, %)."""
        now = time.time() if now is None else now
        latest = self.latest()
        series = {name: list(points) for name, points in self.series.items()} | self._window_series()
        thresholds = self.thresholds()
        charts = [AGENTS_CHART if c.key == "users" and "agents_open" in series else c for c in CHARTS]
        return {
            "run": self.run_info(),
            "t0": self.meta.get("start_ts") or self.meta.get("created_ts"),
            "t1": self.meta.get("end_ts") or now,
            "latest": latest,
            "thresholds": thresholds,
            "charts": [self._chart(c, series, thresholds) for c in charts],
            "capacity": self.capacity(),
        }

    def run_info(self) -> dict:
        profile = self.meta.get("profile") or {}
        params = profile.get("params", {}) if self.params is None else self.params
        return {
            "id": self.run_id,
            "dir": str(self.run_dir),
            "state": self.state,
            "active": self.active,
            "ended": self.ended,
            "profile": profile.get("name"),
            "params": params,
            "params_shown": {name: show_field(name, value) for name, value in params.items()},
            "edits": len(profile.get("edits", [])),
            "phases": profile.get("phases", []),
            "stop_reason": self.meta.get("stop_reason"),
            "exit_code": self.meta.get("exit_code"),
            "edit": self.edit_note,
        }

    def thresholds(self) -> list[dict]:
        """Each threshold's live state: ok, failing, aborted (it stopped the run) or no data."""
        if self.judge is None:
            return []
        return [
            {
                "expr": r.expr,
                "state": _state(r.passed, r.expr == self.aborted_expr),
                "value": r.value,
                "limit": th.value,
                "unit": th.value_unit,
                "shown_value": show(r.value, th.value_unit),
                "shown_limit": show(th.value, th.value_unit),
                "column": th.metric.column,
                "abort": r.abort,
                "samples": r.samples,
            }
            for th, r in zip(self.judge.rules, self.judge.results, strict=False)
        ]

    def capacity(self) -> dict | None:
        """RSS against the agent count, and the straight line through the points so far (N >= 1)."""
        if not self._capacity_points:
            return None
        return {
            "points": self._capacity_points,
            "fit": _line_fit([p for p in self._capacity_points if p[0] >= 1]),
        }

    def table(self) -> list[dict[str, str]]:
        """The Resources tab: this run's latest and worst reading of each gauge."""
        self.update()
        return [
            {
                "name": f"{g.label} ({g.unit})" if g.unit else g.label,
                "now": _shown(self.series[g.column][-1][1], g.scale),
                "worst": f"{g.worst} {_shown(self._worst.get(g.column), g.scale)}",
            }
            for g in GAUGES
            if self.series.get(g.column)
        ]

    # ---- inside --------------------------------------------------------------------------------------
    def _add(self, name: str, ts: float, value: float) -> None:
        self.series.setdefault(name, deque(maxlen=KEEP_POINTS)).append((ts, value))

    def _note_goodput(self, now: float) -> None:
        """The live judge's goodput so far (the run has --slo), as a point of the goodput series."""
        evaluator = self.judge.evaluator if self.judge is not None else None
        share = evaluator.goodput.share()[0] if evaluator is not None else None
        last = self.series.get(GOODPUT)
        if share is not None and (not last or now - last[-1][0] >= GOODPUT_EVERY_S):
            self._add(GOODPUT, now, share)

    def _window_series(self, newest_only: bool = False) -> dict[str, list[tuple[float, float]]]:
        """Per windowed column (ttft_ms...): `ttft_p50_ms`, `ttft_p95_ms`, `ttft_p99_ms` and
        `ttft_window_samples` per window, oldest first, at most KEEP_POINTS windows (or the newest)."""
        found: dict[str, list[tuple[float, float]]] = {}
        for column, windows in self._windows.items():
            keys = sorted(windows)
            for key in keys[:-KEEP_POINTS]:
                del windows[key]
                self._window_stats.pop((column, key), None)
            keys = keys[-1:] if newest_only else keys[-KEEP_POINTS:]
            stats = [(key * WINDOW_S, self._stats_of(column, key)) for key in keys]
            stem = column.removesuffix("_ms")
            for i, (label, _) in enumerate(QUANTILES):
                found[f"{stem}_p{label}_ms"] = [(t, values[i]) for t, values in stats]
            found[f"{stem}_window_samples"] = [(t, values[-1]) for t, values in stats]
        return found

    def _stats_of(self, column: str, key: int) -> tuple[float, ...]:
        """The window's percentiles (QUANTILES' order) and its sample count; computed again only once
        it has grown (rows land in a window until its slowest request has ended)."""
        values = self._windows[column][key]
        count, stats = self._window_stats.get((column, key), (0, ()))
        if count != len(values):
            ordered = sorted(values)
            stats = (*(_nearest_rank(ordered, q) for _, q in QUANTILES), float(len(ordered)))
            self._window_stats[(column, key)] = (len(values), stats)
        return stats

    def _chart(self, chart: Chart, series: dict[str, list], thresholds: list[dict]) -> dict:
        lines = [
            {"label": f"{t['expr']} ({t['state']})", "value": t["limit"] / _SCALE.get(t["column"], 1.0)}
            for t in thresholds
            if _THRESHOLD_CHART.get(t["column"]) == chart.key
        ]
        if chart.key == "memory" and self.budget_bytes:
            lines.append({"label": "memory budget", "value": self.budget_bytes / schema.MIB})
        if chart.key == "host_memory":
            lines.append({"label": "warning line", "value": schema.WARNING_AVAILABLE_BYTES / schema.MIB})
        drawn = []
        for name, column in chart.series:
            scale = _SCALE.get(column, 1.0)
            points = [(t, round(v / scale, 3)) for t, v in series.get(column, [])]
            if points:
                drawn.append({"name": name, "column": column, "points": points})
        return {"key": chart.key, "title": chart.title, "unit": chart.unit, "series": drawn, "lines": lines}


def _state(passed: bool | None, aborted: bool) -> str:
    if aborted:
        return "aborted"
    return {True: "ok", False: "failing", None: "no data"}[passed]


def _line_fit(points: list[tuple[float, float]]) -> dict | None:
    """Least-squares slope (MiB per agent) and intercept; None with fewer than two distinct N."""
    if len({n for n, _ in points}) < 2:
        return None
    count = len(points)
    mean_n = sum(n for n, _ in points) / count
    mean_m = sum(m for _, m in points) / count
    slope = sum((n - mean_n) * (m - mean_m) for n, m in points) / sum((n - mean_n) ** 2 for n, _ in points)
    return {"slope_mib_per_agent": slope, "intercept_mib": mean_m - slope * mean_n, "points": count}


def _nearest_rank(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of a small window, sorted."""
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _number(text) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _shown(value: float | None, scale: float) -> str:
    return "—" if value is None else f"{value / scale:,.1f}"
