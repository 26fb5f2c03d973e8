"""The rounds table of the rounds study: per round of stepped concurrency, peak memory, headroom against the
warning line, swap, per-worker memory and success rate, with a pass/fail and its reason. Pure math.

Per-worker memory is per worker tree (analysis/worker_trees.py) where the sampler read the target's
processes one by one (process_readings.csv): each worker's peak, over the workers that started in the
round and were read at least MIN_READINGS times; the others are counted apart as transient.

A run without that file (before it existed, or sampled by a sampler service) gets the estimate it had:
per reading (target RSS - baseline RSS) / (processes - baseline processes); the baseline is the median
over the "baseline" phase, else the first reading of the run. Only settled readings count: the process
count unchanged since the previous reading and for SETTLE_S, the target's RSS within STEADY of the
previous reading. A reading just after a worker started sees a process that has not allocated yet (a
real agent imports its libraries for seconds) and would pull the figure down. A round with no settled
reading shows its peak instead, and says so. The estimate mixes a worker with its children, counts a
helper process as a worker and the gateway's own growth as the workers': its `worker_mib_from` says
"estimate".
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.hosts import judged_samples
from analysis.model import RunData, per_run
from analysis.resources import DEFAULT_WARNING_BYTES
from analysis.worker_trees import MIN_READINGS, WorkerTree, floor_rule, worker_trees
from contract.schema import MIB, PROCESS, SAMPLE, TASK, TASK_STATUS

SETTLE_S = 2.0  # seconds since the process count last rose
STEADY = 0.02  # largest change of the target's RSS since the previous reading, as a fraction of it


@dataclass
class Baseline:
    """Target memory and process count before any load: what per-worker memory is measured against."""

    rss_bytes: float
    procs: float
    source: str


ESTIMATE_RULE = (
    "per worker (estimate: this run has no process_readings.csv) = (target RSS - baseline RSS) / "
    "(processes - baseline processes), over settled readings only (no new process for "
    f"{SETTLE_S:g} s nor since the previous reading, RSS within {100 * STEADY:g} % of the previous "
    "reading: a worker just started may not have allocated yet); a round with none shows its peak; a "
    "worker's children, helper processes and the gateway's own growth are all divided in"
)
TRANSIENT_LISTED = 5  # transient processes named in the note; the rest counted
COMMAND_CHARS = 60  # of each one's command line: enough to tell a CLI call from a worker


@per_run
def round_workers(run: RunData) -> list[WorkerTree] | None:
    """The run's worker trees (the load began at the first round); None without process readings."""
    readings = run.process_readings
    rounds = (run.meta.get("profile") or {}).get("rounds") or []
    if readings is None or readings.empty or not rounds:
        return None
    return worker_trees(readings, min(r["start_ts"] for r in rounds))


def worker_notes(run: RunData) -> list[str]:
    """The rule per-worker memory followed, and the transient processes it left out."""
    trees = round_workers(run)
    if trees is None:
        return [ESTIMATE_RULE]
    transient = [t for t in trees if not t.counted]
    if not transient:
        return [floor_rule(), f"transient: none (every worker was read at least {MIN_READINGS} times)"]
    named = "; ".join(_describe(t, run) for t in transient[:TRANSIENT_LISTED])
    more = f"; and {len(transient) - TRANSIENT_LISTED} more" if len(transient) > TRANSIENT_LISTED else ""
    return [
        floor_rule(),
        f"transient, not counted: {len(transient)} process tree(s) read fewer than {MIN_READINGS} times: "
        f"{named}{more}",
    ]


def _describe(tree: WorkerTree, run: RunData) -> str:
    command = _command(run, tree.pid)
    shown = f" {command[:COMMAND_CHARS]!r}" if command else ""
    return f"pid {tree.pid}{shown} ({tree.readings} reading(s), {tree.peak_rss_bytes / MIB:,.1f} MiB)"


def _command(run: RunData, pid: int) -> str:
    """The process's command line from processes.csv, its program by name (not its directory)."""
    listed = run.processes
    if listed is None or listed.empty or not (rows := listed[listed[PROCESS.pid] == pid]).size:
        return ""
    program, _, args = str(rows[PROCESS.command].iloc[0]).partition(" ")
    return f"{os.path.basename(program)} {args}".strip()


def phase_windows(meta: dict) -> list[dict]:
    """Profile phases from run.json (name, start_ts, end_ts), skipping malformed ones."""
    phases = (meta.get("profile") or {}).get("phases") or []
    return [p for p in phases if isinstance(p, dict) and {"start_ts", "end_ts"} <= p.keys()]


def baseline(samples: pd.DataFrame, meta: dict) -> Baseline | None:
    """Median target RSS and process count over the baseline phase, else the first reading."""
    measured = samples[samples[SAMPLE.target_rss_bytes].notna()]
    if measured.empty:
        return None
    for phase in phase_windows(meta):
        if phase.get("name") == "baseline":
            inside = _window(measured, phase["start_ts"], phase["end_ts"])
            if not inside.empty:
                return Baseline(
                    inside[SAMPLE.target_rss_bytes].median(),
                    inside[SAMPLE.target_procs].median(),
                    "baseline phase",
                )
    first = measured.iloc[0]
    return Baseline(
        first[SAMPLE.target_rss_bytes], first[SAMPLE.target_procs], "first reading (no baseline phase)"
    )


@per_run
def rounds_table(run: RunData, warning_bytes: float = DEFAULT_WARNING_BYTES) -> pd.DataFrame | None:
    """One row per recorded round; None when the run has no rounds or no samples."""
    rounds = (run.meta.get("profile") or {}).get("rounds") or []
    samples = judged_samples(run)  # one target: the first sampler service's host when there are several
    if not rounds or samples is None or samples.empty:
        return None
    base = baseline(samples, run.meta)
    samples = samples.assign(settled=settled_readings(samples))
    trees = round_workers(run)
    rows = [_round_row(r, samples, run, base, trees, warning_bytes) for r in rounds]
    return pd.DataFrame(rows).set_index("round")


def _window(frame: pd.DataFrame, start: float, end: float, col: str = "ts") -> pd.DataFrame:
    return frame[(frame[col] >= start) & (frame[col] < end)]


def _round_row(
    rnd: dict,
    samples: pd.DataFrame,
    run: RunData,
    base: Baseline | None,
    trees: list[WorkerTree] | None,
    warning_bytes: float,
) -> dict:
    inside = _window(samples, rnd["start_ts"], rnd["end_ts"])
    row = {
        "round": rnd.get("round"),
        "concurrency": rnd.get("concurrency"),
        "readings": len(inside),
        "peak_target_rss_mib": inside[SAMPLE.target_rss_bytes].max() / MIB,
        "min_available_mib": inside[SAMPLE.host_available_bytes].min() / MIB,
        "peak_swap_mib": inside[SAMPLE.host_swap_used_bytes].max() / MIB,
    }
    row.update(_estimated_workers(inside, base) if trees is None else _tree_workers(trees, rnd))
    row.update(_ran_at_once(inside, run, rnd))
    row.update(_success(run, rnd))
    row.update(_verdict(row, warning_bytes))
    return row


def _tree_workers(trees: list[WorkerTree], rnd: dict) -> dict:
    """The round's workers (those first read in it): each one's peak tree RSS, counted over the floor."""
    mine = [t for t in trees if rnd["start_ts"] <= t.first_ts < rnd["end_ts"]]
    peaks = pd.Series([t.peak_rss_bytes / MIB for t in mine if t.counted], dtype=float)
    if len(peaks):
        basis = f"{len(peaks)} worker trees, each its peak"
    elif mine:
        basis = f"no worker read {MIN_READINGS} times ({len(mine)} transient)"
    else:
        basis = "no worker process started in this round"
    return _worker_figures(peaks, basis) | {
        "workers_counted": len(peaks),
        "workers_transient": len(mine) - len(peaks),
    }


def _estimated_workers(inside: pd.DataFrame, base: Baseline | None) -> dict:
    """The estimate from the totals, for a run without process readings (ESTIMATE_RULE)."""
    settled = _per_worker_mib(inside[inside["settled"]], base)
    per_worker = settled if len(settled) else _per_worker_mib(inside, base).nlargest(1)
    basis = f"estimate: {len(settled)} settled readings" if len(settled) else "estimate: peak, none settled"
    figures = _worker_figures(per_worker, basis if len(per_worker) else "no worker counted")
    return figures | {"workers_counted": np.nan, "workers_transient": np.nan}


def _worker_figures(per_worker: pd.Series, basis: str) -> dict:
    return {
        "worker_mib_mean": per_worker.mean(),
        "worker_mib_min": per_worker.min(),
        "worker_mib_max": per_worker.max(),
        "worker_mib_from": basis,
    }


def settled_readings(samples: pd.DataFrame) -> pd.Series:
    """True for readings whose workers have settled: no new process for SETTLE_S, none since the previous
    reading, and the target's RSS steady (within STEADY of the previous reading)."""
    procs, rss = samples[SAMPLE.target_procs], samples[SAMPLE.target_rss_bytes]
    rose_at = samples["ts"].where(procs.diff() > 0).ffill()
    calm = (samples["ts"] - rose_at >= SETTLE_S) | rose_at.isna()
    steady = (procs.diff() == 0) & (rss.diff().abs() <= STEADY * rss.shift())
    return calm & steady


def _per_worker_mib(inside: pd.DataFrame, base: Baseline | None) -> pd.Series:
    if base is None or pd.isna(base.procs):
        return pd.Series(dtype=float)
    workers = inside[SAMPLE.target_procs] - base.procs
    extra = inside[SAMPLE.target_rss_bytes] - base.rss_bytes
    return (extra / workers.where(workers > 0) / MIB).dropna()


def _ran_at_once(inside: pd.DataFrame, run: RunData, rnd: dict) -> dict:
    """Most tasks running at one moment in the round, measured: a round's concurrency is what was submitted,
    and a gateway that caps its workers (Hermes Kanban's max_in_progress) runs fewer. The gateway's own
    in-progress count where it was sampled, else the overlap of the round's tasks' start-to-finish times."""
    sampled = inside[SAMPLE.in_progress].dropna() if SAMPLE.in_progress in inside else pd.Series(dtype=float)
    if len(sampled):
        return {"ran_at_once": float(sampled.max()), "ran_at_once_from": "by the gateway's in-progress count"}
    overlap = _most_overlapping(_round_tasks(run, rnd), rnd["end_ts"])
    if overlap is None:
        return {"ran_at_once": np.nan, "ran_at_once_from": "not measured"}
    return {"ran_at_once": float(overlap), "ran_at_once_from": "by the tasks' start and finish times"}


def _round_tasks(run: RunData, rnd: dict) -> pd.DataFrame:
    tasks = run.tasks
    if tasks is None or tasks.empty or not tasks["round"].notna().any():
        return pd.DataFrame()
    return tasks[tasks["round"] == rnd.get("round")]


def _most_overlapping(tasks: pd.DataFrame, round_end: float) -> int | None:
    """Peak count of tasks between their start and finish (an unfinished task runs to the round's end)."""
    if tasks.empty or TASK.started_ts not in tasks or tasks[TASK.started_ts].isna().all():
        return None
    started = tasks[tasks[TASK.started_ts].notna()]
    finished = started.get(TASK.finished_ts, pd.Series(np.nan, index=started.index)).fillna(round_end)
    events = pd.concat([pd.Series(1, index=started[TASK.started_ts]), pd.Series(-1, index=finished)])
    # summed per instant: a task that finishes as another starts does not overlap it
    return int(events.groupby(level=0).sum().cumsum().max())


def _success(run: RunData, rnd: dict) -> dict:
    """Share of the round's tasks that finished done; falls back to requests inside the round window."""
    tasks = run.tasks
    if tasks is not None and not tasks.empty and tasks["round"].notna().any():
        mine = tasks[tasks["round"] == rnd.get("round")]
        done = int((mine["status"] == TASK_STATUS.done).sum())
        return {"items": len(mine), "succeeded": done, "success_pct": _pct(done, len(mine)), "of": "tasks"}
    req = run.requests
    if req is not None and not req.empty:
        mine = _window(req, rnd["start_ts"], rnd["end_ts"])
        ok = int((mine["ok"] == 1).sum())
        return {"items": len(mine), "succeeded": ok, "success_pct": _pct(ok, len(mine)), "of": "requests"}
    return {"items": 0, "succeeded": 0, "success_pct": np.nan, "of": "(no tasks or requests)"}


def _pct(part: int, whole: int) -> float:
    return part / whole * 100 if whole else np.nan


def _verdict(row: dict, warning_bytes: float) -> dict:
    """Pass when every item succeeded and available memory stayed at or above the warning line."""
    reasons = []
    if pd.isna(row["min_available_mib"]):
        reasons.append("available memory not measured")
    elif row["min_available_mib"] * MIB < warning_bytes:
        reasons.append(f"available memory below {warning_bytes / MIB:.0f} MiB")
    if pd.isna(row["success_pct"]):
        reasons.append("no outcomes recorded")
    elif row["success_pct"] < 100:
        reasons.append(f"{row['items'] - row['succeeded']} {row['of']} not successful")
    return {"passed": not reasons, "why": "; ".join(reasons) or "all succeeded, memory above the line"}
