"""What the load generator itself carried, per process, and whether its own timing held: the console's
last word on the load generator, so a user knows when to add processes (`--processes N`) or hosts
before its limit is taken for the gateway's, and when the host's other processes held the cores instead.
Each request row's agent id starts with the process id of the Locust process that sent it
(agents/base.py), so the rows already say which process did what.
Pure: RunData and the run's Validity in, a record out.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.model import RunData
from analysis.validity import Validity, per_process
from contract.schema import REQUEST

OWN_TIMING = ("load generator CPU p90", "event loop lag p95", "arrival start lateness p95")


@dataclass(frozen=True)
class ProcessLoad:
    """One Locust process's share of the run."""

    pid: str
    requests: int
    per_s: float
    streams: float  # requests in flight on average: their summed latency over the run's seconds

    def text(self, cpu: float | None) -> str:
        at = f", CPU p90 {cpu:.0f} %" if cpu is not None else ""
        return f"pid {self.pid}: {self.per_s:,.1f} req/s, {self.streams:,.1f} streams in flight{at}"


@dataclass(frozen=True)
class LoadgenCapacity:
    processes: tuple[ProcessLoad, ...]
    seconds: float
    cpu: dict[str, float]  # CPU p90 per process, as the validity verdict names them
    timing: tuple[str, ...]  # each own-timing rule judged: its figure against its limit
    rose: bool  # a rule of its own timing failed: the load generator, not the gateway, was the limit
    advice: str | None  # the validity's: more processes only when its own saturated, else a busy host

    def line(self) -> str:
        shares = "; ".join(p.text(self._cpu_of(p.pid)) for p in self.processes)
        verdict = f"held; {self.advice}" if self.advice else "held"  # its own held: the host's cause
        if self.rose:
            verdict = f"ROSE: {self.advice or 'its processes did not saturate: more would not help'}"
        timing = ", ".join(self.timing) or "not judged"
        n = len(self.processes)
        return (
            f"load generator measured: {n} process{'es' if n > 1 else ''} over {self.seconds:,.0f} s; "
            f"{shares}; its own timing ({timing}) {verdict}"
        )

    def _cpu_of(self, pid: str) -> float | None:
        named = [cpu for name, cpu in self.cpu.items() if f"(pid {pid})" in name]
        if not named and len(self.cpu) == 1 and len(self.processes) == 1:
            named = list(self.cpu.values())  # one process: the sampler's reading is its own
        return named[0] if named else None


def loadgen_capacity(run: RunData, validity: Validity) -> LoadgenCapacity | None:
    """None when the run sent no timed request or did not record its span."""
    start, end, rows = run.meta.get("start_ts"), run.meta.get("end_ts"), run.requests
    if rows is None or rows.empty or not isinstance(start, int | float) or not isinstance(end, int | float):
        return None
    seconds = float(end) - float(start)
    if seconds <= 0 or REQUEST.agent_id not in rows or REQUEST.latency_ms not in rows:
        return None
    per_pid = per_process(run)
    loads = tuple(
        ProcessLoad(str(pid), int(n), round(n / seconds, 1), round(latency_ms / 1000 / seconds, 1))
        for pid, n, latency_ms in per_pid.itertuples()
    )
    own = [c for c in validity.checks if c.name in OWN_TIMING and c.value is not None]
    timing = tuple(f"{c.name} {c.value:,.1f} {c.unit} vs {c.limit:g}" for c in own)
    rose = any(c.passed is False for c in own)
    return LoadgenCapacity(loads, seconds, validity.processes, timing, rose, validity.advice())
