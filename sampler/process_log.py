"""processes.csv: which processes the sampler counted, so a run shows exactly what its memory and CPU
figures are made of (the check after a `--target-match REGEX`). One row per process the first time it is
counted as the target or a sidecar, with why (the pid, tree, pattern or cgroup that found it), flushed at
once. process_readings.csv: each target process's parent and RSS at every reading, from which the
analysis sums each worker's tree (a worker with its children, never its siblings or the gateway).

Reads only a new process's ppid and command line; never a process's environment. Secret-looking values
in a command line are masked by contract/redact.py, the rule run.json's commands follow.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil

from contract.csv_append import CsvAppender
from contract.redact import redact_args
from contract.schema import (
    PROCESS_COLUMNS,
    PROCESS_READING,
    PROCESS_READING_COLUMNS,
    PROCESS_READINGS_CSV,
    PROCESSES_CSV,
)
from sampler.readings import ProcStat

COMMAND_CHARS = 300  # enough to tell processes apart; a long argv is cut, not wrapped


class ProcessLog:
    """Appends a row for each (role, pid, start time) not seen before, and the target's processes at
    each reading."""

    def __init__(self, samples_path: str) -> None:
        self._csv = CsvAppender(Path(samples_path).with_name(PROCESSES_CSV), PROCESS_COLUMNS)
        self._readings_path = Path(samples_path).with_name(PROCESS_READINGS_CSV)
        self._readings: CsvAppender | None = None  # opened at the first reading that finds a process
        self._seen: set[tuple[str, int]] = set()

    def note(self, role: str, reasons: dict[int, str]) -> None:
        """`reasons`: each pid counted now, with why (the selector that found it)."""
        new = [pid for pid in sorted(reasons) if (role, pid) not in self._seen]
        for pid in new:
            self._seen.add((role, pid))
            row = {"ts": round(time.time(), 3), "role": role, "pid": pid, "why": reasons[pid]}
            self._csv.write(row | _describe(pid))
        if new:
            self._csv.flush()

    def reading(self, ts: float, stats: list[ProcStat]) -> None:
        """The target's processes as one reading found them: pid, parent, RSS; flushed with the reading."""
        if not stats:
            return
        if self._readings is None:
            self._readings = CsvAppender(self._readings_path, PROCESS_READING_COLUMNS)
        col, at = PROCESS_READING, f"{ts:.3f}"  # samples.csv's ts of the same reading, written alike
        for stat in stats:
            self._readings.write(
                {col.ts: at, col.pid: stat.pid, col.ppid: stat.ppid, col.rss_bytes: stat.rss_bytes}
            )
        self._readings.flush()

    def close(self) -> None:
        self._csv.close()
        if self._readings is not None:
            self._readings.close()


def _describe(pid: int) -> dict[str, object]:
    try:
        process = psutil.Process(pid)
        command = " ".join(redact_args(process.cmdline())) or process.name()
        return {"ppid": process.ppid(), "command": command[:COMMAND_CHARS]}
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return {"ppid": None, "command": None}
