"""The records the sampler produces: small dataclasses with named fields in bytes and seconds.

Every back-end (procfs, psutil, cgroup files, HTTP) fills these same shapes; nothing here reads the OS.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProcStat:
    """One process at one instant. CPU times are cumulative seconds since the process started."""

    pid: int
    ppid: int
    create_time: float  # UTC epoch seconds
    rss_bytes: int
    cpu_self_s: float  # user + system of the process itself
    cpu_children_s: float  # user + system of its children that it has reaped (waited for)
    zombie: bool = False

    @property
    def cpu_total_s(self) -> float:
        """Own time plus reaped descendants: the figure that keeps growing as children come and go."""
        return self.cpu_self_s + self.cpu_children_s

    @property
    def key(self) -> tuple[int, float]:
        """Identity across readings: a recycled pid gets a new create_time, so it is a new process."""
        return (self.pid, self.create_time)


@dataclass(frozen=True)
class TargetReading:
    """The target's processes summed. `cpu_seconds` is cumulative CPU counted since the first reading."""

    rss_bytes: int
    pss_bytes: int | None
    uss_bytes: int | None
    procs: int
    cpu_seconds: float


@dataclass(frozen=True)
class CgroupReading:
    """A cgroup's own memory accounting (v1 or v2 files); None where the kernel does not provide it."""

    memory_bytes: int | None
    peak_bytes: int | None
    anon_bytes: int | None
    file_bytes: int | None


@dataclass(frozen=True)
class HostReading:
    """The whole machine. `cpu_pct` is None on the first reading (a percentage needs two)."""

    available_bytes: int | None
    swap_used_bytes: int | None
    cpu_pct: float | None
    load1: float
    run_queue_per_core: float | None = None  # runnable tasks per logical CPU, None where unreadable


@dataclass(frozen=True)
class QueueReading:
    """The gateway's own queue figures; on any failure both are None and `error` says why, in one line.
    `age_s`: how old the figures were when read, where the source serves a cached reading."""

    queue_length: float | None
    in_progress: float | None
    error: str | None = None
    age_s: float | None = None


@dataclass(frozen=True)
class LoadgenReading:
    """The load generator's RSS, its own CPU, and the CPU of the helper processes it ran (children it
    reaped since the last reading, e.g. `hermes kanban` CLI calls); CPU None on the first reading."""

    rss_bytes: int | None  # None: not read (no load generator named)
    cpu_pct: float | None
    children_cpu_pct: float | None
