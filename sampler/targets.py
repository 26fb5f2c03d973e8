"""The target as one object: its processes re-found at a slow cadence, read at full rate, summed.

Public in-process API (the capacity profile calls it right after each agent is ready):
`ProcessTreeTarget(pid).read() -> TargetReading`, `.median_rss(n=3)`. No CSV, no HTTP, no scheduling.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import psutil

from sampler.cpu import CpuLedger
from sampler.procfs import TICK_S, ProcStatReader
from sampler.readings import ProcStat, TargetReading
from sampler.selection import CgroupSelector, PatternSelector, TargetNotFound, TreeSelector


class Selector(Protocol):
    label: str

    def pids(self) -> set[int]: ...

    def gone(self, live: set[int]) -> bool: ...


class Target:
    """The union of selectors, minus `exclude()` (sidecars). Process set refreshed every
    `tree_refresh_s` (walking /proc costs ~2-4 ms); readings use cached descriptors (~0.2 ms/50 procs).
    A `transient` target (the agents' own stdio servers, each ended with its session) never counts as
    exited: a moment with none of them running is a gap between sessions, and the agents record each end."""

    def __init__(
        self,
        selectors: Sequence[Selector],
        tree_refresh_s: float = 2.0,
        exclude: Callable[[], set[int]] = set,
        clock: Callable[[], float] = time.time,
        allow_empty: bool = False,
        transient: bool = False,
    ) -> None:
        self.selectors = list(selectors)
        self.transient = transient
        self.tree_refresh_s = tree_refresh_s
        self._exclude = exclude
        self._clock = clock
        self._reader = ProcStatReader()
        self._ledger = CpuLedger()
        self._psutil: dict[int, psutil.Process] = {}
        self._pids: set[int] = set()
        self._why: dict[int, str] = {}
        self.last_read: list[ProcStat] = []  # the live processes of the latest reading (process_readings.csv)
        self._refreshed_at = self._prev_refresh = clock()
        self.refresh()
        if not self._pids and not allow_empty:
            raise TargetNotFound("nothing matches the target: " + ", ".join(s.label for s in self.selectors))
        self.alive = True

    @property
    def pids(self) -> set[int]:
        return set(self._pids)

    def refresh(self) -> None:
        """Re-find the target's processes now (new workers appear only at a refresh)."""
        self._prev_refresh, self._refreshed_at = self._refreshed_at, self._clock()
        why: dict[int, str] = {}
        for selector in self.selectors:
            for pid in selector.pids():
                why.setdefault(pid, _why(selector, pid))
        self._why = why
        self._pids = set(why) - self._exclude()
        self._reader.keep_only(self._pids)
        for pid in set(self._psutil) - self._pids:
            del self._psutil[pid]

    def reasons(self) -> dict[int, str]:
        """Why each process counted now is counted (processes.csv's `why`): the selector that found it."""
        return {pid: self._why.get(pid, "") for pid in self._pids}

    def read(self, with_pss: bool = False) -> TargetReading:
        """One reading; also updates `alive` (False once any selector's target is gone)."""
        if self._clock() - self._refreshed_at >= self.tree_refresh_s:
            self.refresh()
        stats = self._read_stats()
        live = {s.pid for s in stats if not s.zombie}
        if not self.transient and any(sel.gone(live) for sel in self.selectors):
            self.refresh()  # a restarted worker is not a dead target: look again before saying so
            stats = self._read_stats()
            live = {s.pid for s in stats if not s.zombie}
            self.alive = not any(sel.gone(live) for sel in self.selectors)
        cpu = self._ledger.update(stats, new_after=self._prev_refresh - TICK_S)
        pss, uss = self._pss_uss(live) if with_pss else (None, None)
        rss = sum(s.rss_bytes for s in stats)
        self.last_read = [s for s in stats if not s.zombie]
        return TargetReading(rss_bytes=rss, pss_bytes=pss, uss_bytes=uss, procs=len(live), cpu_seconds=cpu)

    def median_rss(self, n: int = 3) -> int:
        """Median RSS of n back-to-back readings after a refresh (the study's protocol, in-process)."""
        self.refresh()
        return int(statistics.median(self.read().rss_bytes for _ in range(n)))

    def close(self) -> None:
        self._reader.close()

    def _read_stats(self) -> list[ProcStat]:
        stats = [self._reader.read(pid) for pid in self._pids]
        found = [s for s in stats if s is not None]
        self._pids = {s.pid for s in found}
        return found

    def _pss_uss(self, pids: set[int]) -> tuple[int, int]:
        """Summed PSS and USS (psutil memory_full_info: tens of ms for big processes, so not every read)."""
        pss = uss = 0
        for pid in pids:
            try:
                proc = self._psutil.setdefault(pid, psutil.Process(pid))
                full = proc.memory_full_info()
            except psutil.Error:
                continue
            pss += full.pss
            uss += full.uss
        return pss, uss


def _why(selector: Selector, pid: int) -> str:
    explain = getattr(selector, "why", None)  # a selector that says no more than its label has none
    return explain(pid) if explain is not None else selector.label


def ProcessTreeTarget(pid: int, tree_refresh_s: float = 2.0) -> Target:  # reads as a class
    """A pid and its descendants."""
    return Target([TreeSelector(pid)], tree_refresh_s)


def PatternTarget(pattern: str, tree_refresh_s: float = 2.0) -> Target:
    """Processes whose command line matches `pattern`."""
    return Target([PatternSelector(pattern)], tree_refresh_s)


def CgroupTarget(path: str, tree_refresh_s: float = 2.0) -> Target:
    """The processes of a cgroup directory."""
    return Target([CgroupSelector(path)], tree_refresh_s)
