"""The host's other processes by CPU over a span (a run): every process's CPU time read at its start and
at its end, so advice about a busy host can name who held the cores. Two /proc walks per run, nothing
while it runs; a process that started and ended in between is not seen (a floor, not a ranking of all).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil

from contract.redact import redact_args

TOP = 3
COMMAND_CHARS = 80


@dataclass(frozen=True)
class CpuCensus:
    ts: float
    cpu_s: dict[tuple[int, float], tuple[float, str]]  # (pid, create time) -> (CPU seconds, command)


def census() -> CpuCensus:
    """Every process's CPU time now (user + system), by pid and start time (a reused pid is another)."""
    found: dict[tuple[int, float], tuple[float, str]] = {}
    for proc in psutil.process_iter(["cpu_times", "create_time", "cmdline", "name"]):
        times, created = proc.info["cpu_times"], proc.info["create_time"]
        if times is None or created is None:
            continue  # gone, or not ours to read
        command = " ".join(redact_args(proc.info["cmdline"] or [])) or proc.info["name"] or "?"
        found[(proc.pid, created)] = (times.user + times.system, command[:COMMAND_CHARS])
    return CpuCensus(time.time(), found)


def busiest(before: CpuCensus, after: CpuCensus, exclude: set[int], top: int = TOP) -> list[dict]:
    """The `top` processes not in `exclude` by CPU over the span, each as % of one core; those seen at
    both ends only."""
    span = after.ts - before.ts
    if span <= 0:
        return []
    used = [
        (cpu - before.cpu_s[key][0], key[0], command)
        for key, (cpu, command) in after.cpu_s.items()
        if key in before.cpu_s and key[0] not in exclude
    ]
    used.sort(reverse=True)
    return [
        {"pid": pid, "command": command, "cpu_pct": round(100 * seconds / span, 1)}
        for seconds, pid, command in used[:top]
        if seconds > 0
    ]
