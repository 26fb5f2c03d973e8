"""The sampling loop: builds the probes from SamplerOptions, takes a reading every interval, writes rows.

Owns scheduling, stop rules (target gone, load generator gone, duration, signal) and error logging; the
numbers come from the probes and cpu.py, the formatting from rows.py.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from contract import schema
from contract.redact import redact
from sampler import cgroupfs
from sampler.cpu import cpu_percent
from sampler.csv_out import SampleWriter
from sampler.host import HostProbe
from sampler.memory_probe import MemoryProbe, MemoryReading
from sampler.options import SamplerOptions
from sampler.process_log import ProcessLog
from sampler.procfs import ProcStatReader
from sampler.readings import HostReading, LoadgenReading, TargetReading
from sampler.rows import Tick, to_row
from sampler.selection import CgroupSelector, PatternSelector, Scope, TreeSelector
from sampler.targets import Selector, Target

if TYPE_CHECKING:
    from sampler.queue_probe import QueueProbe

EVENT = schema.SAMPLE_EVENT


class ProcessWatch:
    """One process, no tree (the load generator): RSS, own and children's CPU %, whether it still runs.

    Its own CPU alone judges saturation: a child's CPU is not the Locust process's work."""

    def __init__(self, pid: int, clock: Callable[[], float]) -> None:
        self.pid = pid
        self._clock = clock
        self._reader = ProcStatReader()
        self._prev: tuple[float, float, float] | None = None

    def read(self) -> LoadgenReading | None:
        """The process now, or None once it is gone."""
        stat = self._reader.read(self.pid)
        if stat is None or stat.zombie:
            return None
        now, prev = self._clock(), self._prev
        self._prev = (now, stat.cpu_self_s, stat.cpu_children_s)
        if prev is None:
            return LoadgenReading(stat.rss_bytes, None, None)
        own = cpu_percent(prev[1], stat.cpu_self_s, prev[0], now)
        return LoadgenReading(stat.rss_bytes, own, cpu_percent(prev[2], stat.cpu_children_s, prev[0], now))


class RowSink(Protocol):
    """Where rows go: samples.csv (SampleWriter) or the sampler service's row buffer."""

    def write(self, row: dict[str, str]) -> None: ...

    def close(self) -> None: ...


class Sampler:
    """Readings of the named target (or, without one, of the queue and the load generator only: the host's
    memory figures, of a machine that may not be the target's, are then left empty; its CPU and run queue
    are the load generator's situation, which the validity rules read)."""

    def __init__(
        self, opts: SamplerOptions, clock: Callable[[], float] = time.time, sink: RowSink | None = None
    ) -> None:
        self.opts = opts
        self._clock = clock
        loadgen = {opts.loadgen_pid} if opts.loadgen_pid else set()
        self.sidecars = sidecars = _sidecar_target(opts, loadgen, clock)
        sidecar_pids = (lambda: sidecars.pids) if sidecars else set
        selectors = _target_selectors(opts, loadgen)
        self.target = None
        if selectors:
            waits = opts.wait_for_target or opts.transient_target
            self.target = Target(
                selectors, opts.tree_refresh_s, sidecar_pids, clock, waits, opts.transient_target
            )
        self.host = HostProbe() if selectors or opts.loadgen_pid else None
        self.host_memory = bool(selectors)  # the target's host: its memory is the target's to report
        self.host_label = opts.host_label or socket.gethostname()
        self.queue = _queue_probe(opts)
        self.loadgen = ProcessWatch(opts.loadgen_pid, clock) if opts.loadgen_pid else None
        self.writer = sink or SampleWriter(opts.out)
        self.processes = None if sink else ProcessLog(opts.out)  # the service keeps no files
        self.rows = 0
        self.lock = threading.Lock()  # the service's HTTP threads read the same target
        self._start = clock()
        self._prev_cpu: tuple[float, float] | None = None
        self._logged: set[str] = set()

    def tick(self) -> Tick:
        """Take one reading and write its row."""
        with self.lock:
            return self._tick()

    def step_reading(self, with_pss: bool) -> MemoryReading | None:
        """A capacity step's reading (median of 3, taken now) for the service's `/v1/reading`; None with
        no target. Shares the target with the loop, hence the lock."""
        if self.target is None:
            return None
        with self.lock:
            return MemoryProbe(self.target, self.sidecars).read(with_pss)

    def _read_host(self) -> HostReading | None:
        if self.host is None:
            return None
        reading = self.host.read()
        return reading if self.host_memory else replace(reading, available_bytes=None, swap_used_bytes=None)

    def _tick(self) -> Tick:
        ts = self._clock()
        target, cpu = self._read_target(ts)
        alive = self.target.alive if self.target else None
        events: list[str] = [EVENT.target_exited] if alive is False else []
        queue = self.queue.read() if self.queue else None
        if queue and queue.error:
            events.append(f"{EVENT.queue_probe_error}: {queue.error}")
            self._log_once(f"queue probe {self.opts.queue_url}: {queue.error}")
        loadgen = self.loadgen.read() if self.loadgen else None
        if self.loadgen and loadgen is None:
            events.append(EVENT.loadgen_exited)
        tick = Tick(
            ts=ts,
            elapsed_s=ts - self._start,
            target_alive=alive,
            target=target,
            target_cpu_pct=cpu,
            host=self._read_host(),
            cgroup=cgroupfs.combine([cgroupfs.read_memory(Path(c)) for c in self.opts.cgroups]),
            queue=queue,
            sidecar_rss_bytes=self.sidecars.read().rss_bytes if self.sidecars else None,
            loadgen=loadgen,
            events=tuple(events),
            host_label=self.host_label,
        )
        self.writer.write(to_row(tick))
        if self.processes and self.target:
            self.processes.note("target", self.target.reasons())
            self.processes.reading(ts, self.target.last_read)
        if self.processes and self.sidecars:
            self.processes.note("sidecar", self.sidecars.reasons())
        self.rows += 1
        return tick

    def _read_target(self, ts: float) -> tuple[TargetReading | None, float | None]:
        """The target's reading and CPU % since the previous one (None on the first, or with no target)."""
        if self.target is None:
            return None, None
        target = self.target.read(with_pss=self.opts.pss_every > 0 and self.rows % self.opts.pss_every == 0)
        prev = self._prev_cpu
        cpu = None if prev is None else cpu_percent(prev[1], target.cpu_seconds, prev[0], ts)
        self._prev_cpu = (ts, target.cpu_seconds)
        return target, cpu

    def run(self, stop: threading.Event) -> str:
        """Sample until a stop rule fires; return why (one line)."""
        interval = self.opts.interval
        next_at = time.monotonic()
        while True:
            tick = self.tick()
            if EVENT.target_exited in tick.events:
                return f"target exited ({self._target_label()})"
            if EVENT.loadgen_exited in tick.events:
                return f"load generator pid {self.opts.loadgen_pid} exited"
            if self.opts.duration is not None and tick.elapsed_s >= self.opts.duration:
                return f"duration {self.opts.duration:g} s reached"
            next_at = max(next_at + interval, time.monotonic())
            if stop.wait(max(0.0, next_at - time.monotonic())):
                return "stopped by signal"

    def close(self) -> None:
        self.writer.close()
        if self.processes:
            self.processes.close()
        if self.target:
            self.target.close()
        if self.queue:
            self.queue.close()

    def _target_label(self) -> str:
        return ", ".join(s.label for s in self.target.selectors) if self.target else "no target"

    def _log_once(self, message: str) -> None:
        if message not in self._logged:
            self._logged.add(message)
            print(f"sampler: {redact(message)}", file=sys.stderr, flush=True)  # a URL's userinfo


def _target_selectors(opts: SamplerOptions, loadgen: set[int]) -> list:
    return (
        [TreeSelector(pid) for pid in opts.pids]
        + [PatternSelector(m, exclude=loadgen, scope=scope_of(opts)) for m in opts.matches]
        + [CgroupSelector(c) for c in opts.cgroups]
    )


def scope_of(opts: SamplerOptions) -> Scope:
    """--match's scope: the user's --match-* choices; the load generator's tree is the kit's, save the
    trees of the pids named (the gateway the kit started)."""
    return Scope(
        opts.match_user,
        opts.match_cwd,
        opts.match_env,
        opts.match_all,
        kit_root=opts.loadgen_pid,
        kit_targets=frozenset(opts.pids),
        kit_launches=opts.transient_target,
    )


def _sidecar_target(opts: SamplerOptions, loadgen: set[int], clock: Callable[[], float]) -> Target | None:
    selectors: list[Selector] = [TreeSelector(p) for p in opts.sidecar_pids]
    kit = Scope(match_all=True, kit_root=opts.loadgen_pid, kit_targets=frozenset(opts.pids))
    selectors += [PatternSelector(m, exclude=loadgen, scope=kit) for m in opts.sidecar_matches]
    return Target(selectors, opts.tree_refresh_s, clock=clock) if selectors else None


def _queue_probe(opts: SamplerOptions) -> QueueProbe | None:
    if not opts.queue_url or not opts.queue_field:
        return None
    from sampler.queue_probe import QueueProbe  # httpx: ~70 ms the kit waits for the first row, unused here

    timeout = min(2.0, opts.interval / 2)  # well under the interval: a slow gateway must not stall rows
    return QueueProbe(opts.queue_url, opts.queue_field, opts.inflight_field, timeout, opts.queue_age_field)
