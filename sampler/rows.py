"""Turns one tick's readings into a samples.csv row (column -> text), in contract.schema's units.

Pure formatting: None becomes an empty cell ("not measured"), never zero. No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from contract.schema import SAMPLE, SAMPLE_COLUMNS
from sampler.readings import CgroupReading, HostReading, LoadgenReading, QueueReading, TargetReading


@dataclass(frozen=True)
class Tick:
    """Everything measured at one reading, before formatting."""

    ts: float
    elapsed_s: float
    target_alive: bool | None  # None: no target named (a queue-only sampler)
    target: TargetReading | None
    target_cpu_pct: float | None
    host: HostReading | None  # None: no target on this host, so its host figures are not the target's
    cgroup: CgroupReading | None = None
    queue: QueueReading | None = None
    sidecar_rss_bytes: int | None = None
    loadgen: LoadgenReading | None = None
    events: tuple[str, ...] = ()
    host_label: str = ""


_NO_TARGET = TargetReading(None, None, None, None, 0.0)  # type: ignore[arg-type]  # all cells empty
_NO_HOST = HostReading(None, None, None, None, None)  # type: ignore[arg-type]


def _cell(value: object, digits: int = 0) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and digits:
        return f"{value:.{digits}f}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def to_row(t: Tick) -> dict[str, str]:
    cg = t.cgroup or CgroupReading(None, None, None, None)
    q = t.queue or QueueReading(None, None)
    target = t.target or _NO_TARGET
    host = t.host or _NO_HOST
    lg = t.loadgen or LoadgenReading(None, None, None)
    row = {
        "ts": _cell(t.ts, 3),
        SAMPLE.elapsed_s: _cell(t.elapsed_s, 3),
        SAMPLE.target_alive: "" if t.target_alive is None else "1" if t.target_alive else "0",
        SAMPLE.target_procs: _cell(target.procs),
        SAMPLE.target_rss_bytes: _cell(target.rss_bytes),
        SAMPLE.target_pss_bytes: _cell(target.pss_bytes),
        SAMPLE.target_uss_bytes: _cell(target.uss_bytes),
        SAMPLE.target_cpu_pct: _cell(t.target_cpu_pct, 1),
        SAMPLE.cgroup_memory_bytes: _cell(cg.memory_bytes),
        SAMPLE.cgroup_peak_bytes: _cell(cg.peak_bytes),
        SAMPLE.cgroup_anon_bytes: _cell(cg.anon_bytes),
        SAMPLE.cgroup_file_bytes: _cell(cg.file_bytes),
        SAMPLE.host_available_bytes: _cell(host.available_bytes),
        SAMPLE.host_swap_used_bytes: _cell(host.swap_used_bytes),
        SAMPLE.host_cpu_pct: _cell(host.cpu_pct, 1),
        SAMPLE.load1: _cell(host.load1, 2),
        SAMPLE.host_run_queue_per_core: _cell(host.run_queue_per_core, 2),
        "queue_length": _cell(q.queue_length),
        "in_progress": _cell(q.in_progress),
        SAMPLE.queue_age_s: _cell(q.age_s, 3),
        SAMPLE.sidecar_rss_bytes: _cell(t.sidecar_rss_bytes),
        SAMPLE.loadgen_rss_bytes: _cell(lg.rss_bytes),
        SAMPLE.loadgen_cpu_pct: _cell(lg.cpu_pct, 1),
        SAMPLE.loadgen_children_cpu_pct: _cell(lg.children_cpu_pct, 1),
        "event": "; ".join(t.events),
        "host": t.host_label,
    }
    return {col: row[col] for col in SAMPLE_COLUMNS}
