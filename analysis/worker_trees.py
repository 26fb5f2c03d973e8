"""Per-worker memory per worker tree, from process_readings.csv (each target process's parent and RSS at
every reading). Pure math.

A worker is a process the gateway started once the load began (the task board's or Hermes Kanban's
per-task worker): a child of one of the gateway's own processes, or a new root of the target (a worker
that detached: its parent is init). Its tree is it and every process under it; its memory is the most
its tree held at one reading (the sum over the tree, so a worker's children count and its siblings
never do). The gateway's own processes, those read before the load began, are no worker: their growth
is the gateway's.

The floor: a worker counts when the sampler read its tree at least MIN_READINGS times, i.e. watched it
over at least two sampler intervals. One read once or twice is a helper the gateway ran for a moment (a
CLI call) or a worker caught before it allocated (an agent imports its libraries for seconds); either
would pull the figure down, so they are listed apart as transient, never averaged in.

A pid the kernel hands out again within one run is taken for the same process (its first parent holds):
two workers one after the other on one pid read as one, the larger peak of the two.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from contract.schema import PROCESS_READING

MIN_READINGS = 3  # readings of a worker's tree before it counts: two sampler intervals at least
COL = PROCESS_READING


@dataclass(frozen=True)
class WorkerTree:
    """One worker as the readings saw it."""

    pid: int
    first_ts: float
    last_ts: float
    readings: int  # readings that found its tree
    peak_rss_bytes: float  # the most its tree held at one reading
    procs: int  # the most processes its tree had at one reading

    @property
    def counted(self) -> bool:
        return self.readings >= MIN_READINGS


def worker_trees(readings: pd.DataFrame, load_from: float | None) -> list[WorkerTree]:
    """Every worker in `readings`, in order of first reading. `load_from`: when the load began (processes
    read before it are the gateway's own); None: the first reading's processes are."""
    if readings.empty:
        return []
    readings = readings.dropna(subset=[COL.ts, COL.pid, COL.rss_bytes]).sort_values(COL.ts, kind="stable")
    own = _own_processes(readings, load_from)
    firsts = readings.drop_duplicates(COL.pid)
    parent = dict(zip(firsts[COL.pid].astype(int), firsts[COL.ppid].fillna(0).astype(int), strict=True))
    worker = {pid: _worker_of(pid, parent, own) for pid in parent}
    mine = readings.assign(worker=readings[COL.pid].astype(int).map(worker)).dropna(subset=["worker"])
    per_reading = mine.groupby(["worker", COL.ts])[COL.rss_bytes].agg(["sum", "size"]).reset_index()
    trees = [_tree(int(pid), rows) for pid, rows in per_reading.groupby("worker")]
    return sorted(trees, key=lambda t: t.first_ts)


def _own_processes(readings: pd.DataFrame, load_from: float | None) -> set[int]:
    first_ts = readings[COL.ts].iloc[0]
    before = readings[COL.ts] < load_from if load_from is not None else readings[COL.ts] == first_ts
    if not before.any():
        before = readings[COL.ts] == first_ts
    return set(readings.loc[before, COL.pid].astype(int))


def _worker_of(pid: int, parent: dict[int, int], own: set[int]) -> int | None:
    """The worker whose tree holds `pid`: the topmost of its ancestors that the gateway did not own."""
    found, seen = None, set()
    while pid in parent and pid not in own and pid not in seen:  # a recycled pid could close a loop
        seen.add(pid)
        found, pid = pid, parent[pid]
    return found


def _tree(pid: int, rows: pd.DataFrame) -> WorkerTree:
    return WorkerTree(
        pid=pid,
        first_ts=float(rows[COL.ts].min()),
        last_ts=float(rows[COL.ts].max()),
        readings=len(rows),
        peak_rss_bytes=float(rows["sum"].max()),
        procs=int(rows["size"].max()),
    )


def floor_rule() -> str:
    """The rule line the report prints with per-worker memory."""
    return (
        "per worker = the most one worker's process tree (the worker and the processes under it) held at "
        "one reading; a worker is a process the gateway started after the load began (processes read "
        f"before are the gateway's own: their growth is not a worker's); only workers read at least "
        f"{MIN_READINGS} times count (two sampler intervals: one read less may be a helper the gateway "
        "ran for a moment, or a worker caught before it allocated); the others are listed apart as "
        "transient"
    )
