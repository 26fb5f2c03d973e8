"""One step of the fit profile: the readings and rows that arrive while it holds, the rule that says when
its memory and latency are steady, and its scored figures.

A step is held at least its least hold; from then on it is scored as soon as the steady rule holds over
its last window, or at its longest hold (then scored as "not steady", and said so). Pure: rows in,
figures out; every method takes `now`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from contract.derived import number
from contract.schema import ERROR_INTERRUPTED, MIB, REQUEST, SAMPLE
from scenarios.slo import Goodput, Slo

RSS_SLOPE_MIB_PER_MIN = 6.0  # steady: the target RSS's OLS slope over the last window within this...
RSS_CHANGE_MIB = 1.0  # ...or its fitted change across the window under this (a short window's jitter)
P95_CHANGE = 0.25  # steady: latency p95 of the last window within 25 % of the window before it
MIN_WINDOW_REQUESTS = 10  # fewer requests in either window: latency is not judged (memory alone)
MIN_WINDOW_SAMPLES = 3  # fewer sampler readings in the last window: not steady yet
STEADY_RULE = (
    f"a step is scored once held its least hold (--step-every) and, over its last window (the last half of "
    f"the least hold, ending at the newest sampler reading), the target RSS's OLS slope is "
    f"within {RSS_SLOPE_MIB_PER_MIN:g} MiB/min (or its fitted change across the window under "
    f"{RSS_CHANGE_MIB:g} MiB) and the latency p95 is within {100 * P95_CHANGE:g} % of the window before "
    f"(judged with >= {MIN_WINDOW_REQUESTS} requests in each); at its longest hold it is scored anyway, "
    "marked not steady"
)


@dataclass(frozen=True)
class Steadiness:
    steady: bool
    why: str  # what held it, or what the rule read


def rss_slope_mib_per_min(points: list[tuple[float, float]]) -> float | None:
    """OLS slope of (ts, RSS bytes) in MiB per minute; None with fewer than MIN_WINDOW_SAMPLES points."""
    if len(points) < MIN_WINDOW_SAMPLES:
        return None
    mean_t = sum(t for t, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return None
    slope = sum((t - mean_t) * (y - mean_y) for t, y in points) / spread
    return slope / MIB * 60


def nearest_rank(values: list[float], q: float) -> float | None:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else None


def judge_steady(
    rss: list[tuple[float, float]], window_s: float, last_p95: list[float], before_p95: list[float]
) -> Steadiness:
    """The steady rule over one window: `rss` the (ts, bytes) readings in it, the latencies of the
    requests that ended in it and in the window before."""
    slope = rss_slope_mib_per_min(rss)
    if slope is None:
        return Steadiness(False, f"fewer than {MIN_WINDOW_SAMPLES} target RSS readings in the last window")
    change = abs(slope) * window_s / 60
    if abs(slope) > RSS_SLOPE_MIB_PER_MIN and change >= RSS_CHANGE_MIB:
        return Steadiness(False, f"target RSS still moving: {slope:+.1f} MiB/min over the last window")
    if len(last_p95) < MIN_WINDOW_REQUESTS or len(before_p95) < MIN_WINDOW_REQUESTS:
        return Steadiness(True, f"RSS {slope:+.1f} MiB/min; latency not judged (too few requests)")
    now, before = nearest_rank(last_p95, 0.95), nearest_rank(before_p95, 0.95)
    assert now is not None and before is not None
    if before > 0 and abs(now - before) / before > P95_CHANGE:
        return Steadiness(False, f"latency p95 moved {before:,.0f} -> {now:,.0f} ms between windows")
    return Steadiness(True, f"RSS {slope:+.1f} MiB/min, latency p95 {before:,.0f} -> {now:,.0f} ms")


@dataclass
class _Request:
    end_ts: float
    latency_ms: float | None
    ttft_ms: float | None
    ok: bool
    row: dict | None  # the whole row, kept only to judge goodput (the run has --slo)


@dataclass
class StepRows:
    """What arrived while one step held: sampler readings and request rows (by the time they ended)."""

    agents: int
    start_ts: float
    slos: tuple[Slo, ...] = ()
    samples: list[dict] = field(default_factory=list)
    requests: list[_Request] = field(default_factory=list)

    def observe_sample(self, row: dict) -> None:
        ts = number(row.get(SAMPLE.ts))
        if ts is not None and ts >= self.start_ts:
            self.samples.append(row)

    def observe_request(self, row: dict) -> None:
        ts = number(row.get(REQUEST.ts))
        if ts is None or ts < self.start_ts or row.get(REQUEST.error_kind) == ERROR_INTERRUPTED:
            return
        latency = number(row.get(REQUEST.latency_ms))
        ok = number(row.get(REQUEST.ok)) == 1
        ttft = number(row.get(REQUEST.ttft_ms))
        self.requests.append(
            _Request(ts + (latency or 0) / 1000, latency, ttft, ok, row if self.slos else None)
        )

    def rss_in(self, start: float, end: float) -> list[tuple[float, float]]:
        return self._series(SAMPLE.target_rss_bytes, start, end)

    def steadiness(self, now: float, window_s: float) -> Steadiness:
        last = [r.latency_ms for r in self._ended(now - window_s, now) if r.ok and r.latency_ms is not None]
        before = [
            r.latency_ms
            for r in self._ended(now - 2 * window_s, now - window_s)
            if r.ok and r.latency_ms is not None
        ]
        read = self.read_until(now)
        return judge_steady(self.rss_in(read - window_s, read), window_s, last, before)

    def read_until(self, now: float) -> float:
        """The newest sampler reading's time (rows reach the file a moment after they are read: the
        memory window ends there, not at `now`); `now` before the first one."""
        times = [ts for row in self.samples if (ts := number(row.get(SAMPLE.ts))) is not None and ts <= now]
        return max(times, default=now)

    def score(self, now: float, window_s: float, steady: Steadiness, cores: int) -> dict:
        """The step's figures: memory and CPU over its last window (medians, means), latency, errors and
        goodput over the requests that ended in its last two windows."""
        read = self.read_until(now)
        since = read - window_s
        ended = self._ended(now - 2 * window_s, now)
        good = [r for r in ended if r.ok]
        target_cpu = _mean(self._values(SAMPLE.target_cpu_pct, since, read))
        return {
            "agents": self.agents,
            "start_ts": self.start_ts,
            "scored_ts": now,
            "steady": steady.steady,
            "steady_why": steady.why,
            "rss_mib": _scaled(_median(self._values(SAMPLE.target_rss_bytes, since, read)), MIB),
            "available_mib": _scaled(_median(self._values(SAMPLE.host_available_bytes, since, read)), MIB),
            "sidecar_rss_mib": _scaled(_median(self._values(SAMPLE.sidecar_rss_bytes, since, read)), MIB),
            "cpu_target_pct": target_cpu,
            "cpu_target_share_pct": None if target_cpu is None else target_cpu / cores,
            "cpu_host_pct": _mean(self._values(SAMPLE.host_cpu_pct, since, read)),
            "procs": _median(self._values(SAMPLE.target_procs, since, read)),
            "readings": len(self._values(SAMPLE.target_rss_bytes, since, read)),
            "requests": len(ended),
            "errors": len(ended) - len(good),
            "latency_p95_ms": nearest_rank([r.latency_ms for r in good if r.latency_ms is not None], 0.95),
            "ttft_p95_ms": nearest_rank([r.ttft_ms for r in good if r.ttft_ms is not None], 0.95),
            "latency_n": len(good),
            "goodput": self._goodput(now - 2 * window_s, now),
        }

    def _goodput(self, start: float, end: float) -> float | None:
        """The share of the requests ended in [start, end) that met every --slo (scenarios/slo.py's rule)."""
        if not self.slos:
            return None
        judge = Goodput(self.slos)
        for req in self._ended(start, end):
            if req.row is not None:
                judge.observe_request(req.row)
        return judge.share()[0]

    def _ended(self, start: float, end: float) -> list[_Request]:
        return [r for r in self.requests if start <= r.end_ts < end]

    def _series(self, column: str, start: float, end: float) -> list[tuple[float, float]]:
        found = []
        for row in self.samples:
            ts, value = number(row.get(SAMPLE.ts)), number(row.get(column))
            if ts is not None and value is not None and start < ts <= end:
                found.append((ts, value))
        return found

    def _values(self, column: str, start: float, end: float) -> list[float]:
        return [v for _, v in self._series(column, start, end)]


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _scaled(value: float | None, unit: float) -> float | None:
    return None if value is None else value / unit
