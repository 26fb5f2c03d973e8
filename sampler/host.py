"""Host back-end: available memory, swap used, whole-host CPU %, 1-minute load and the run queue per
core now, as a HostReading.

Keeps only the previous CPU counters (a percentage needs two readings); the arithmetic lives in cpu.py.
"""

from __future__ import annotations

import os

import psutil

from sampler.cpu import host_cpu_percent, run_queue_per_core
from sampler.readings import HostReading


class HostProbe:
    def __init__(self) -> None:
        self._prev: tuple[float, float] | None = None

    def read(self) -> HostReading:
        times = psutil.cpu_times()
        # guest time is already inside user time on Linux: leave it out of the total, as psutil does
        total = sum(times) - getattr(times, "guest", 0.0) - getattr(times, "guest_nice", 0.0)
        busy = total - times.idle - getattr(times, "iowait", 0.0)
        pct = None if self._prev is None else host_cpu_percent(self._prev[0], busy, self._prev[1], total)
        self._prev = (busy, total)
        return HostReading(
            available_bytes=psutil.virtual_memory().available,
            swap_used_bytes=psutil.swap_memory().used,
            cpu_pct=pct,
            load1=os.getloadavg()[0],
            run_queue_per_core=run_queue_per_core(_proc_stat(), os.cpu_count() or 1),
        )


def _proc_stat() -> str:
    """/proc/stat's text; empty where there is none (not Linux)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            return f.read()
    except OSError:
        return ""
