"""The report's Workload section: what load it was. The sizes asked beside the sizes the gateway
reported (mean, p5, p50, p95 per call), tokens and dollars per call and per task at the run's price
table, and a warning when the gateway's count of the input differs from the asked size by over 10 % on the
mean, or by over 5 % on one call in twenty (the p95 of each call's error: a mean can hide the short
prompts coming out too large and the long ones too small); sizes no usage confirmed are called unverified.

Pure functions on RunData and a PriceTable: no file reading. A request that asked no size (a fixed
prompt, a dataset's conversation) is in the totals, not in the asked-vs-achieved rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import cost
from analysis.model import RunData, Section, per_run
from analysis.prices import PriceTable, PriceTableError
from contract.schema import REQUEST, TASK

TITLE = "Workload"
DISAGREE_PCT = 10.0  # asked vs reported means beyond this: a warning
CALL_ERROR_PCT = 5.0  # p95 of each call's |reported - asked| / asked beyond this: a warning
QUANTILES = (5, 50, 95)
INPUT_SIZES = "input tokens per call"  # the size table's row of the input
TAIL_SAMPLES = 200  # p5 and p95 rest on about ten values beyond them from here on
MATCH_S = 5.0  # a task row belongs to its agent's submit row sent within this of its submission


def asked_and_reported(run: RunData) -> pd.DataFrame:
    """One row per successful request that asked a size: asked_in/out and the gateway's count per call
    (from the row, or for a task submitted by it, the task's tokens over its LLM calls)."""
    columns = ["asked_in", "asked_out", "reported_in", "reported_out"]
    frame = run.requests
    if frame is None or REQUEST.asked_tokens_in not in frame:
        return pd.DataFrame(columns=columns, dtype=float)
    asked = frame[
        (frame["ok"] == 1) & frame[[REQUEST.asked_tokens_in, REQUEST.asked_tokens_out]].notna().any(axis=1)
    ]
    own = asked[[REQUEST.tokens_in, REQUEST.tokens_out]].notna().any(axis=1)
    parts = [_frame(asked[own], asked[own][REQUEST.tokens_in], asked[own][REQUEST.tokens_out])]
    if (~own).any() and run.tasks is not None and not run.tasks.empty:
        parts.append(_via_tasks(asked[~own], run.tasks))
    return pd.concat(parts, ignore_index=True)


def _frame(rows: pd.DataFrame, reported_in: pd.Series, reported_out: pd.Series) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "asked_in": rows[REQUEST.asked_tokens_in].to_numpy(dtype=float),
            "asked_out": rows[REQUEST.asked_tokens_out].to_numpy(dtype=float),
            "reported_in": reported_in.to_numpy(dtype=float),
            "reported_out": reported_out.to_numpy(dtype=float),
        }
    )


def _via_tasks(submits: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """Each submit row's task: the same agent's task submitted nearest in time (an agent works one task
    at a time), its usage split over its LLM calls."""
    usage = tasks[
        ["agent_id", TASK.submitted_ts, REQUEST.tokens_in, REQUEST.tokens_out, TASK.llm_calls]
    ].dropna(subset=[TASK.submitted_ts])
    merged = pd.merge_asof(
        submits.sort_values("ts"),
        usage.sort_values(TASK.submitted_ts),
        left_on="ts",
        right_on=TASK.submitted_ts,
        by="agent_id",
        direction="nearest",
        tolerance=MATCH_S,
        suffixes=("_row", ""),
    )
    calls = merged[TASK.llm_calls].where(merged[TASK.llm_calls] > 0, 1.0).fillna(1.0)
    return _frame(merged, merged[REQUEST.tokens_in] / calls, merged[REQUEST.tokens_out] / calls)


@per_run
def unverified_sizes(run: RunData) -> str | None:
    """Why the sizes asked are not confirmed by the gateway's own count, or None when they are: calls
    that asked an input size and got no input tokens back were cut at the kit's default or last-learnt
    characters per token, and nothing says the gateway counted them so. Console, report and summary.json
    say it in these words."""
    frame = run.requests
    if frame is None or REQUEST.asked_tokens_in not in frame:
        return None
    asked = int(((frame["ok"] == 1) & frame[REQUEST.asked_tokens_in].notna()).sum())
    if not asked:
        return None
    confirmed = int(asked_and_reported(run)["reported_in"].notna().sum())
    if confirmed >= asked:
        return None
    if not confirmed:
        return (
            f"sizes unverified: the gateway reported no input tokens for the {asked:,} calls that asked a "
            "size, so the prompts were cut at an uncalibrated 4 characters a token"
        )
    missing = asked - confirmed
    return (
        f"sizes partly unverified: {missing:,} of {asked:,} calls that asked a size reported no input tokens"
    )


def size_table(pairs: pd.DataFrame) -> pd.DataFrame:
    """Asked vs reported per call: n, mean and p5/p50/p95 of each, and the means' difference in %."""
    rows = []
    for label, asked_col, reported_col in (
        (INPUT_SIZES, "asked_in", "reported_in"),
        ("output tokens per call", "asked_out", "reported_out"),
    ):
        both = pairs[[asked_col, reported_col]].dropna()
        if both.empty:
            continue
        row: dict = {"measure": label, "n": len(both)}
        for name, column in (("asked", asked_col), ("reported", reported_col)):
            values = both[column].to_numpy(dtype=float)
            row[f"{name}_mean"] = float(values.mean())
            row.update(
                {
                    f"{name}_p{q}": float(v)
                    for q, v in zip(QUANTILES, np.percentile(values, QUANTILES), strict=True)
                }
            )
        asked_mean = row["asked_mean"]
        row["diff_pct"] = (row["reported_mean"] - asked_mean) / asked_mean * 100 if asked_mean else np.nan
        asked = both[asked_col].where(both[asked_col] > 0)
        row["call_error_p95_pct"] = float(((both[reported_col] - asked).abs() / asked * 100).quantile(0.95))
        rows.append(row)
    return pd.DataFrame(rows).set_index("measure") if rows else pd.DataFrame()


def disagreements(sizes: pd.DataFrame) -> list[str]:
    """Warnings (input off by > 10 % on the mean or > 5 % on the p95 call, output above its max_tokens)
    and a note (output below it)."""
    lines = []
    for measure, row in sizes.iterrows():
        diff, call_p95 = row["diff_pct"], row["call_error_p95_pct"]
        if str(measure).startswith("input") and call_p95 > CALL_ERROR_PCT and abs(diff) <= DISAGREE_PCT:
            lines.append(
                f"warning: one input in twenty is off its asked size by over {call_p95:.1f} % (p95 of each "
                f"call's error, bar {CALL_ERROR_PCT:g} %; the means differ {diff:+.1f} %, "
                f"n={int(row['n'])}): the gateway counts the kit's prompts unlike its calibration "
                "(docs/workloads.md)"
            )
        if pd.isna(diff) or abs(diff) <= DISAGREE_PCT:
            continue
        reported, asked = row["reported_mean"], row["asked_mean"]
        said = f"{reported:,.0f} reported for {asked:,.0f} asked ({diff:+.1f} %, n={int(row['n'])})"
        if str(measure).startswith("input"):
            lines.append(
                f"warning: the gateway's input tokens differ from the asked size by over {DISAGREE_PCT:g} %: "
                f"{said}; a gateway that adds context of its own (system prompt, tools, history) counts more"
            )
        elif diff > 0:
            lines.append(
                f"warning: output tokens above the max_tokens sent: {said}; the gateway ignores max_tokens"
            )
        else:
            lines.append(
                f"output tokens below the max_tokens sent: {said}; max_tokens is a ceiling, the model "
                "stopped sooner (the simulator's reply length is its --output-tokens knob)"
            )
    return lines


def per_call_and_task(run: RunData, prices: PriceTable) -> pd.DataFrame:
    """Mean tokens in / cached / out and dollars (list, as billed, cache floor) per LLM call and per task."""
    if cost.usage_rows(run)[1] == "none":
        return pd.DataFrame()
    priced, _ = cost.priced_usage(run, prices)
    calls = priced[TASK.llm_calls].fillna(1.0).sum()
    out = {"per call": _means(priced, calls, int(calls))}
    tasks = _task_usage(run, priced)
    if not tasks.empty:
        out["per task"] = _means(tasks, len(tasks), len(tasks))
    table = pd.DataFrame(out).T
    table.index.name = "unit"
    return table


def _means(frame: pd.DataFrame, divisor: float, count: int) -> dict:
    row: dict = {"count": count}
    for column in (REQUEST.tokens_in, REQUEST.tokens_cached, REQUEST.tokens_out):
        row[column] = frame[column].sum(min_count=1) / divisor if divisor else np.nan
    row["input_per_output"] = (
        row[REQUEST.tokens_in] / row[REQUEST.tokens_out] if row[REQUEST.tokens_out] else np.nan
    )
    for column in cost.DOLLAR_COLUMNS:
        values = frame[column]
        row[column] = values.sum() / divisor if divisor and values.notna().all() else np.nan
    return row


def _task_usage(run: RunData, priced: pd.DataFrame) -> pd.DataFrame:
    """Tokens and dollars summed per task (a task's own row, or its calls' rows by task_id)."""
    with_task = priced[priced["task_id"].notna()]
    if with_task.empty:
        return with_task
    columns = [REQUEST.tokens_in, REQUEST.tokens_cached, REQUEST.tokens_out, *cost.DOLLAR_COLUMNS]
    return with_task.groupby("task_id")[columns].sum(min_count=1)


def workload_section(run: RunData, prices: PriceTable | PriceTableError) -> Section | None:
    """The Workload section; None when the run sent nothing (no requests)."""
    if run.requests is None or run.requests.empty:
        return None
    section = Section(TITLE, notes=_described(run.meta.get("workload")))
    if (unverified := unverified_sizes(run)) is not None:
        section.notes.append(f"warning: {unverified}")
    sizes = size_table(asked_and_reported(run))
    if not sizes.empty:
        section.tables.append(("asked vs reported by the gateway", sizes))
        if int(sizes["n"].min()) < TAIL_SAMPLES:
            section.notes.append(f"p5 and p95 need ~{TAIL_SAMPLES} requests; these rest on fewer")
        section.notes.extend(disagreements(sizes))
    if isinstance(prices, PriceTableError):
        section.notes.append(f"dollars n/a: {prices}")
    else:
        usage = per_call_and_task(run, prices)
        if not usage.empty:
            section.tables.append(("tokens and dollars (means)", usage))
            section.notes.append(cost.price_dates(priced_models(run), prices))
    return section


def priced_models(run: RunData) -> list[str]:
    rows, _ = cost.usage_rows(run)
    return sorted(str(m) for m in rows["model"].dropna().unique())


def _described(workload: object) -> list[str]:
    """The workload as run.json recorded it, in one line, and its calibration."""
    sources = ("input_tokens", "output_tokens", "dataset", "trace", "sessions", "think_time")
    if not isinstance(workload, dict) or not any(workload.get(k) for k in sources):
        return ["workload: each agent's fixed short prompt, max_tokens from --max-tokens, its own think time"]
    parts = [f"seed {workload.get('seed')}"]
    for key, label in (
        ("input_tokens", "input"),
        ("output_tokens", "output (max_tokens)"),
        ("prefix_tokens", "shared prefix tokens"),
        ("think_time", "think time"),
    ):
        if workload.get(key):
            parts.append(f"{label}: {workload[key]}")
    for key in ("dataset", "trace", "sessions"):
        if isinstance(workload.get(key), dict):
            parts.append(f"{key}: " + ", ".join(f"{k} {v}" for k, v in workload[key].items()))
    notes = [
        "workload: " + "; ".join(parts) + (f" (from {workload['file']})" if workload.get("file") else "")
    ]
    calibration = workload.get("calibration")
    if isinstance(calibration, dict):
        learnt, aside = calibration.get("responses"), calibration.get("implausible_responses")
        overhead = calibration.get("overhead_tokens")
        plus = f" plus {overhead:g} tokens a request" if overhead else ""
        notes.append(
            f"calibration: {calibration.get('chars_per_token')} characters per token{plus} of the gateway's "
            f"count, learnt from {learnt} responses ({aside} set aside) — rule: {calibration.get('rule')}"
        )
    return notes
