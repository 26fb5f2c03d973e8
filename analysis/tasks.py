"""Task tables from tasks.csv: how long tasks waited, ran and took ready->done, and how they ended.

Pure: a RunData in, DataFrames out; durations stay in milliseconds as the contract stores them.
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData, per_run
from analysis.stats import describe
from contract.schema import TASK, TASK_STATUS

DURATIONS = {TASK.queue_wait_ms: "queue wait", TASK.run_ms: "run time", TASK.total_ms: "ready -> done"}


def task_timing_table(run: RunData) -> pd.DataFrame | None:
    """Queue wait, run time and ready->done of finished tasks (ms): count, percentiles, max; these use the
    gateway's own times where it keeps them (tasks.csv times_from). Then the run time as the client
    polled it, labelled with the poll interval (late by up to one interval at each end)."""
    tasks = run.tasks
    if tasks is None or tasks.empty:
        return None
    rows = [{"measure": label, **describe(tasks[col])} for col, label in DURATIONS.items()]
    if TASK.polled_run_ms in tasks and tasks[TASK.polled_run_ms].notna().any():
        interval = tasks[TASK.poll_interval_ms].dropna()
        every = f"every {interval.median():g} ms" if len(interval) else "by events"
        rows.append({"measure": f"run time as polled ({every})", **describe(tasks[TASK.polled_run_ms])})
    return pd.DataFrame(rows).set_index("measure")


def task_outcome_table(run: RunData) -> pd.DataFrame | None:
    """Tasks per terminal status with their share, plus the total submitted."""
    tasks = run.tasks
    if tasks is None or tasks.empty:
        return None
    counts = tasks["status"].fillna("(no status)").value_counts()
    table = pd.DataFrame({"tasks": counts, "share_pct": counts / counts.sum() * 100})
    table.loc["total"] = [int(counts.sum()), 100.0]
    table["tasks"] = table["tasks"].astype(int)
    table.index.name = "status"
    return table


@per_run
def not_done_reasons(run: RunData) -> dict[str, int]:
    """Tasks that ended not done, by why (the agent loop's end_reason: max_steps, error; else the
    status: failed, cancelled...), most first; tasks the run's stop left unfinished are not among them."""
    tasks = run.tasks
    if tasks is None or tasks.empty:
        return {}
    ended = tasks[~tasks["status"].isin([TASK_STATUS.done, TASK_STATUS.unfinished])]
    reason = ended["status"].astype(object)
    if TASK.end_reason in ended:
        reason = ended[TASK.end_reason].astype(object).where(ended[TASK.end_reason].notna(), reason)
    return {str(k): int(v) for k, v in reason.fillna("(no status)").value_counts().items()}


def not_done_text(run: RunData) -> str | None:
    """ "3 of 40 (max_steps 2, error 1)": the tasks not done of those submitted, and why."""
    counts = task_counts(run)
    if not counts:
        return None
    why = ", ".join(f"{reason} {n:,}" for reason, n in not_done_reasons(run).items())
    unfinished = counts["not_done"] - sum(not_done_reasons(run).values())
    cut = f"{unfinished:,} unfinished at the run's stop" if unfinished else ""
    detail = "; ".join(part for part in (why, cut) if part)
    return f"{counts['not_done']:,} of {counts['submitted']:,}" + (f" ({detail})" if detail else "")


@per_run
def task_counts(run: RunData) -> dict[str, int] | None:
    """Submitted, done and failed (every non-done terminal status) counts, for summaries."""
    tasks = run.tasks
    if tasks is None or tasks.empty:
        return None
    done = int((tasks["status"] == TASK_STATUS.done).sum())
    return {"submitted": len(tasks), "done": done, "not_done": len(tasks) - done}
