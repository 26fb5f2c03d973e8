"""One run's live picture for the web UI cockpit: time series of users, resources, TTFT, TPOT and
goodput, threshold states and the capacity fit so far, as one JSON-ready snapshot (also the source of
the /metrics text).

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
from contract.derived import TPOT_MS, derived_value
from kit.judge import LiveJudge

KEEP_POINTS = 3600  # per series: an hour at 1 Hz, as Locust's own chart history (kit.runtime)
TTFT_BUCKET_S = 2.0  # TTFT and TPOT percentiles per window of this many seconds (by send time)
GOODPUT_EVERY_S = 1.0  # a goodput point (the share so far) at most this often
CAPACITY_EVENTS = ("baseline", "ready")


@dataclass(frozen=True)
class Gauge:
    column: str  # samples.csv column
    label: str
    scale: float  # divide the file's value by this for display
    unit: str
    worst: str  # "max" or "min": which extreme the Resources tab keeps


GAUGES = (
    Gauge("target_rss_bytes", "target RSS", schema.MIB, "MiB", "max"),
    Gauge("target_pss_bytes", "target PSS", schema.MIB, "MiB", "max"),
    Gauge("target_procs", "target processes", 1, "", "max"),
    Gauge("target_cpu_pct", "target CPU", 1, "% of a core", "max"),
    Gauge("host_available_bytes", "host available memory", schema.MIB, "MiB", "min"),
    Gauge("host_swap_used_bytes", "host swap used", schema.MIB, "MiB", "max"),
    Gauge("host_cpu_pct", "host CPU", 1, "%", "max"),
    Gauge("load1", "load average (1 min)", 1, "", "max"),
    Gauge("queue_length", "gateway queue length", 1, "", "max"),
    Gauge("in_progress", "gateway in progress", 1, "", "max"),
    Gauge("loadgen_cpu_pct", "load generator CPU", 1, "% of a core", "max"),
)
_SCALE = {g.column: g.scale for g in GAUGES} | {"ttft_ms": 1.0, "latency_ms": 1.0, TPOT_MS: 1.0}
WINDOWED = ("ttft", "tpot")  # per-window p50/p95 series, from each request row


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    unit: str
    series: tuple[tuple[str, str], ...]  # (series name, column: samples.csv or a live series)


CHARTS = (
    Chart("users", "users", "", (("users", "users"), ("target", "target_users"))),
    Chart("memory", "target memory", "MiB", (("RSS", "target_rss_bytes"), ("PSS", "target_pss_bytes"))),
    Chart("host_memory", "host available memory", "MiB", (("available", "host_available_bytes"),)),
    Chart("swap", "host swap used", "MiB", (("swap", "host_swap_used_bytes"),)),
    Chart(
        "cpu",
        "CPU",
        "%",
        (("host", "host_cpu_pct"), ("target", "target_cpu_pct"), ("load generator", "loadgen_cpu_pct")),
    ),
    Chart("queue", "gateway queue", "", (("queue", "queue_length"), ("in progress", "in_progress"))),
    Chart("ttft", "TTFT", "ms", (("p50", "ttft_p50_ms"), ("p95", "ttft_p95_ms"))),
    Chart("tpot", "TPOT (time per output token)", "ms", (("p50", "tpot_p50_ms"), ("p95", "tpot_p95_ms"))),
    Chart("goodput", "goodput (met every SLO)", "%", (("requests", "goodput_pct"),)),
)
_THRESHOLD_CHART = {"ttft_ms": "ttft", TPOT_MS: "tpot"} | {col: c.key for c in CHARTS for _, col in c.series}


@dataclass
class LiveRun:
    """Fed by the run (rows, users, judge); asked by the web UI for snapshot()."""

    run_id: str
    run_dir: Path
    meta: dict  # the run's run.json content, kept up to date by the run
    budget_bytes: float | None = None  # drawn on the memory chart when the profile has a budget
    state: str = "ready"  # ready, running, finished
    edit_note: str = ""
    judge: LiveJudge | None = None
    aborted_expr: str | None = None
    series: dict[str, deque] = field(default_factory=dict)
    requests: int = 0
    _windows: dict[str, dict[int, list[float]]] = field(default_factory=lambda: {k: {} for k in WINDOWED})
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
        """A recorder listener: every requests.csv row, for the count and the TTFT windows."""
        if file_name != schema.REQUESTS_CSV:
            return
        self.requests += 1
        bucket = int(float(row["ts"]) // TTFT_BUCKET_S)
        for name, value in (("ttft", _number(row.get("ttft_ms"))), ("tpot", derived_value(TPOT_MS, row))):
            if value is not None:
                self._windows[name].setdefault(bucket, []).append(value)

    def on_users(self, ts: float, users: int, target_users: int) -> None:
        self._add("users", ts, users)
        self._add("target_users", ts, target_users)

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
            n, rss = _number(row.get("n")), _number(row.get("rss_bytes"))
            if row.get("event") in CAPACITY_EVENTS and n is not None and rss is not None:
                self._capacity_points.append((n, rss / schema.MIB))

    def latest(self) -> dict[str, float]:
        """The newest value of every series, in file units (bytes, ms, %); TTFT of the newest window."""
        self.update()
        found = {name: points[-1][1] for name, points in self.series.items() if points}
        for name in WINDOWED:
            windows = self._percentile_windows(name)
            if windows:
                found[f"{name}_p50_ms"], found[f"{name}_p95_ms"] = windows[-1][1], windows[-1][2]
        found["requests_total"] = float(self.requests)
        return found

    def snapshot(self, now: float | None = None) -> dict:
        """Everything the cockpit draws, JSON-ready. Charts in display units (MiB, ms, %)."""
        now = time.time() if now is None else now
        latest = self.latest()
        series = {name: list(points) for name, points in self.series.items()}
        for name in WINDOWED:
            windows = self._percentile_windows(name)
            series[f"{name}_p50_ms"] = [(t, p50) for t, p50, _ in windows]
            series[f"{name}_p95_ms"] = [(t, p95) for t, _, p95 in windows]
        thresholds = self.thresholds()
        return {
            "run": self.run_info(),
            "t0": self.meta.get("start_ts") or self.meta.get("created_ts"),
            "t1": self.meta.get("end_ts") or now,
            "latest": latest,
            "thresholds": thresholds,
            "charts": [self._chart(c, series, thresholds) for c in CHARTS],
            "capacity": self.capacity(),
        }

    def run_info(self) -> dict:
        profile = self.meta.get("profile") or {}
        return {
            "id": self.run_id,
            "dir": str(self.run_dir),
            "state": self.state,
            "profile": profile.get("name"),
            "params": profile.get("params", {}),
            "phases": profile.get("phases", []),
            "stop_reason": self.meta.get("stop_reason"),
            "exit_code": self.meta.get("exit_code"),
            "edit": self.edit_note,
        }

    def thresholds(self) -> list[dict]:
        """Each threshold's live state: ok, failing, aborted (it stopped the run) or no data."""
        if self.judge is None or self.judge.evaluator is None:
            return []
        rules = self.judge.evaluator.thresholds
        return [
            {
                "expr": r.expr,
                "state": _state(r.passed, r.expr == self.aborted_expr),
                "value": r.value,
                "limit": th.value,
                "column": th.metric.column,
                "abort": r.abort,
                "samples": r.samples,
            }
            for th, r in zip(rules, self.judge.results, strict=False)
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

    def _percentile_windows(self, name: str) -> list[tuple[float, float, float]]:
        """(window start, p50, p95) of TTFT or TPOT per window, oldest first, at most KEEP_POINTS."""
        windows = self._windows[name]
        for key in sorted(windows)[:-KEEP_POINTS]:
            del windows[key]
        return [
            (key * TTFT_BUCKET_S, _percentile(values, 0.50), _percentile(values, 0.95))
            for key, values in sorted(windows.items())
        ]

    def _note_goodput(self, now: float) -> None:
        """The live judge's goodput so far (the run has --slo), as a point of the goodput series."""
        evaluator = self.judge.evaluator if self.judge is not None else None
        share = evaluator.goodput.share()[0] if evaluator is not None else None
        last = self.series.get("goodput_pct")
        if share is not None and (not last or now - last[-1][0] >= GOODPUT_EVERY_S):
            self._add("goodput_pct", now, share * 100)

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


def _percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile of a small window."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _number(text) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _shown(value: float | None, scale: float) -> str:
    return "—" if value is None else f"{value / scale:,.1f}"
