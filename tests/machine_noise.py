"""What the rest of the machine costs a timed test right now: the floor under any timing tolerance.

A timing test states its bar for a quiet machine (e.g. TTFT within 20 ms) and adds the scheduling delay
measured around it (and, for a section that needs the CPU, the cores other processes kept busy), so a
busy shared host widens the bar by what it measurably costs, and no more.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Callable

import psutil

SLEEP_S = 0.005


def scheduling_delay_ms(samples: int = 40) -> float:
    """p90 of how much later than asked a short sleep returns, in ms (gevent's loop when patched)."""
    late = []
    for _ in range(samples):
        t0 = time.perf_counter()
        time.sleep(SLEEP_S)
        late.append((time.perf_counter() - t0 - SLEEP_S) * 1000)
    return statistics.quantiles(late, n=10)[-1]


def busy_cpu_s(pids: list[int]) -> tuple[float, float]:
    """(CPU seconds the whole host has spent busy, CPU seconds of `pids` and their children)."""
    host = psutil.cpu_times()
    busy = host.user + host.nice + host.system + host.irq + host.softirq + getattr(host, "steal", 0.0)
    own = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            for process in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
                with contextlib.suppress(psutil.NoSuchProcess):
                    times = process.cpu_times()
                    own += times.user + times.system
    return busy, own


class NoiseWindow:
    """What the rest of the machine costs a timed section: the scheduling delay measured before and
    after it (the larger counts), and how many cores other processes kept busy during it.

    `pids`: the processes the section itself runs (this one is always counted, with its children,
    e.g. a simulator it started): their CPU is the section's own, not outside load."""

    def __init__(self, pids: tuple[int, ...] = ()) -> None:
        self.pids = [os.getpid(), *pids]
        self.before_ms = scheduling_delay_ms()
        self.after_ms: float | None = None
        self.other_cores = 0.0
        self._start = (time.monotonic(), *busy_cpu_s(self.pids))

    def close(self) -> float:
        wall0, busy0, own0 = self._start
        busy, own = busy_cpu_s(self.pids)
        self.other_cores = max(0.0, (busy - busy0) - (own - own0)) / max(time.monotonic() - wall0, 1e-3)
        self.after_ms = scheduling_delay_ms()
        return self.delay_ms

    @property
    def delay_ms(self) -> float:
        return max(self.before_ms, self.after_ms or 0.0)

    def tolerance_ms(self, quiet_bar_ms: float, per_busy_core_ms: float = 0.0) -> float:
        """The quiet-machine bar, plus the scheduling delay, plus `per_busy_core_ms` for each core that
        other processes kept busy during the section (for a section that needs the CPU, not only
        prompt wake-ups: two processes exchanging a stream share what the others leave them)."""
        return quiet_bar_ms + self.delay_ms + per_busy_core_ms * self.other_cores


def retake(measure: Callable[[], tuple[float, float]], attempts: int = 3) -> list[tuple[float, float]]:
    """Readings (deviation from the truth, bar) taken until one is within its bar, at most `attempts`.

    Outside load on a shared host comes in bursts the window above does not always catch; the claim is
    what the kit does in a quiet moment, so a reading spoiled by a burst is taken again, and the test
    reports every reading when none is within its bar."""
    readings: list[tuple[float, float]] = []
    while len(readings) < attempts and not (readings and abs(readings[-1][0]) <= readings[-1][1]):
        readings.append(measure())
    return readings


def within_bar(readings: list[tuple[float, float]]) -> bool:
    return abs(readings[-1][0]) <= readings[-1][1]
