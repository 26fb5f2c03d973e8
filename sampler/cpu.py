"""Pure CPU accounting: cumulative target CPU seconds from per-process cumulative times, and rates.

No OS access and no clock: callers pass readings and timestamps, so every rule is unit-tested with fakes.
"""

from __future__ import annotations

from collections.abc import Iterable

from sampler.readings import ProcStat

Key = tuple[int, float]
_MAX_ANCESTRY = 64  # a ppid chain longer than this is a cycle from recycled pids


class CpuLedger:
    """Counts the CPU a changing set of processes used, children that exited included.

    Rule, per reading: each live process contributes the growth of own + reaped-children time since the
    previous reading. A process seen for the first time contributes its whole life only if it was created
    after `new_after` (the last moment the caller looked for processes); otherwise it is a baseline. When
    a tracked process disappears its parent's children time jumps by that whole life, part of which was
    already counted, so its last seen total is subtracted from its nearest live tracked ancestor (each
    process's contribution clamped at >= 0). Short-lived children never seen are counted via the parent.
    """

    def __init__(self) -> None:
        self._last: dict[Key, ProcStat] = {}
        self._started = False
        self.total_s = 0.0

    def update(self, stats: Iterable[ProcStat], new_after: float) -> float:
        """Take one reading; return the cumulative CPU seconds counted so far."""
        current = {s.key: s for s in stats}
        deltas = {key: self._growth(s, new_after) for key, s in current.items()}
        live = {s.pid: s.key for s in current.values()}
        vanished = {s.pid: s for key, s in self._last.items() if key not in current}
        for gone in vanished.values():
            heir = _live_ancestor(gone, live, vanished)
            if heir is not None:
                deltas[heir] -= gone.cpu_total_s
        self.total_s += sum(max(0.0, d) for d in deltas.values())
        self._last = current
        self._started = True
        return self.total_s

    def _growth(self, stat: ProcStat, new_after: float) -> float:
        prev = self._last.get(stat.key)
        if prev is not None:
            return stat.cpu_total_s - prev.cpu_total_s
        if self._started and stat.create_time > new_after:
            return stat.cpu_total_s
        return 0.0


def _live_ancestor(gone: ProcStat, live: dict[int, Key], vanished: dict[int, ProcStat]) -> Key | None:
    """The nearest ancestor still tracked now; walks through ancestors that vanished in the same gap."""
    ppid = gone.ppid
    for _ in range(_MAX_ANCESTRY):
        if ppid in live:
            return live[ppid]
        if ppid not in vanished:
            return None
        ppid = vanished[ppid].ppid
    return None


def cpu_percent(cpu_before_s: float, cpu_after_s: float, wall_before_s: float, wall_after_s: float) -> float:
    """CPU seconds per wall second, in percent of one core (a 2-core busy process reads 200)."""
    wall = wall_after_s - wall_before_s
    if wall <= 0:
        raise ValueError(f"wall clock did not advance ({wall_before_s} -> {wall_after_s})")
    return max(0.0, cpu_after_s - cpu_before_s) / wall * 100.0


def host_cpu_percent(busy0: float, busy1: float, all0: float, all1: float) -> float:
    """Share of all cores' time that was busy between two readings of the host counters, 0-100."""
    total = all1 - all0
    if total <= 0:
        return 0.0
    return min(100.0, max(0.0, (busy1 - busy0) / total * 100.0))


def run_queue_per_core(proc_stat: str, cpus: int) -> float | None:
    """Runnable tasks now per logical CPU, from /proc/stat's `procs_running` less the reader itself (it is
    running while it reads); None when the line is absent. A load average lags by a minute: this does not."""
    for line in proc_stat.splitlines():
        name, _, value = line.partition(" ")
        if name == "procs_running" and value.strip().isdigit():
            return max(0, int(value) - 1) / max(1, cpus)
    return None
