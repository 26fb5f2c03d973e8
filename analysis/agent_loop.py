"""The agent loop's section of the report: steps per task and why tasks ended, context tokens per step (the
growth curve), tool time vs model time, tokens and dollars per task and per step with the cache floor.

Pure: requests.csv and tasks.csv rows (tasks with `steps`) and a price table in, tables and notes out.
Must not read files or price anything itself (analysis/cost.py prices).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.cost import TOKEN_COLUMNS, price_rows
from analysis.model import RunData, Section
from analysis.prices import PriceTable, PriceTableError
from analysis.stats import describe
from contract.schema import REQUEST, TASK, TASK_STATUS

PERCENTILES = (50, 95)
SHOWN_STEPS = 12  # steps 1..11 and the last are listed


def loop_tasks(run: RunData) -> pd.DataFrame:
    """The tasks.csv rows of agent-loop tasks (those with a step count)."""
    tasks = run.tasks
    if tasks is None or "steps" not in tasks or tasks["steps"].isna().all():
        return pd.DataFrame()
    return tasks[tasks["steps"].notna()]


def loop_steps(run: RunData) -> pd.DataFrame:
    """requests.csv rows that are steps of an agent-loop task."""
    requests = run.requests
    if requests is None or "step" not in requests:
        return pd.DataFrame()
    return requests[requests["step"].notna() & requests["task_id"].notna()]


def end_reasons(tasks: pd.DataFrame) -> pd.DataFrame:
    """Tasks per end reason (answer, max_steps, error), with steps and tool calls of each."""
    grouped = tasks.groupby(tasks[TASK.end_reason].fillna(TASK_STATUS.unfinished))
    table = grouped.agg(
        tasks=("task_id", "size"), steps_mean=("steps", "mean"), tool_calls_mean=("tool_calls", "mean")
    )
    table["share_pct"] = table["tasks"] / table["tasks"].sum() * 100
    return table


def steps_table(tasks: pd.DataFrame) -> pd.DataFrame:
    return _described({"model calls (steps)": tasks["steps"], "tool calls": tasks["tool_calls"]})


def _described(columns: dict[str, pd.Series], with_mean: bool = False) -> pd.DataFrame:
    """One row per named series: (mean,) count, p50, p95, max and the small-sample flag."""
    rows = {
        name: {**({"mean": values.mean()} if with_mean else {}), **describe(values, percentiles=PERCENTILES)}
        for name, values in columns.items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "item"
    return table[table["n"] > 0]  # a figure nobody reported (the gateway's cost, say) is left out


def context_by_step(steps: pd.DataFrame) -> pd.DataFrame:
    """Per step number: calls, median tokens in (the context sent), its growth over the step before,
    cached tokens, tokens out, tool calls made, and which kind of first token the stream led with."""
    ok = steps[steps["ok"] == 1]
    grouped = ok.groupby("step")
    table = grouped.agg(
        calls=("task_id", "size"),
        tokens_in_median=(REQUEST.tokens_in, "median"),
        tokens_cached_median=(REQUEST.tokens_cached, "median"),
        tokens_out_median=(REQUEST.tokens_out, "median"),
        tool_calls_mean=("tool_calls", "mean"),
    )
    table.insert(2, "growth_median", table["tokens_in_median"].diff())
    if REQUEST.first_token_kind in ok:
        kinds = ok.groupby("step")[REQUEST.first_token_kind].agg(
            lambda s: ", ".join(sorted(s.dropna().unique()))
        )
        table["first_token"] = kinds
    table.index = table.index.astype(int)
    shown = sorted(set(table.index[: SHOWN_STEPS - 1]) | {table.index.max()})
    return table.loc[shown]


def time_split(tasks: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Per task (ms): waiting for the model (its steps' latencies), running tools, the rest (the agent's
    own work between calls), and the end-to-end time."""
    model_ms = steps.groupby("task_id")[REQUEST.latency_ms].sum()
    frame = tasks.set_index("task_id")[[TASK.total_ms, TASK.tool_ms]].astype(float)
    frame["model_ms"] = model_ms.reindex(frame.index)
    frame["other_ms"] = (frame[TASK.total_ms] - frame["model_ms"] - frame[TASK.tool_ms]).clip(lower=0)
    parts = {
        "model_ms": "waiting for the model",
        TASK.tool_ms: "running tools",
        "other_ms": "the agent's own work",
    }
    parts[TASK.total_ms] = "end to end"
    table = _described({words: frame[name] for name, words in parts.items()})
    shares = frame[list(parts)].sum() / frame[TASK.total_ms].sum() * 100
    table["share_pct"] = shares.rename(index=parts)  # aligned by row: a row left out has none
    return table


def task_ledger(tasks: pd.DataFrame, prices: PriceTable) -> tuple[pd.DataFrame, list[str]]:
    """Tokens and dollars per task and per step: mean and percentiles, dollars at list price, as billed
    and at the cache floor (every input token at the cached price), and the input:output ratio."""
    absent = {c: np.nan for c in TOKEN_COLUMNS if c not in tasks}  # tasks.csv has no cache writes
    priced, warnings = price_rows(tasks.assign(**absent), prices)
    per_step = priced["steps"].where(priced["steps"] > 0)
    columns = {
        "input tokens": priced[REQUEST.tokens_in],
        "cached input tokens": priced[REQUEST.tokens_cached],
        "output tokens": priced[REQUEST.tokens_out],
        "$ at list price": priced["usd_list"],
        "$ as billed": priced["usd_billed"],
        "$ at the cache floor": priced["usd_floor"],
        "$ the gateway reported": priced[REQUEST.gateway_cost_usd],
        "$ per step, as billed": priced["usd_billed"] / per_step,
    }
    return _described(columns, with_mean=True), warnings


def loop_section(run: RunData, prices: PriceTable | PriceTableError) -> Section | None:
    """The report's Agent loop section; None when the run made no agent-loop task. Given a rejected price
    file, tokens are still shown, every dollar is n/a and the error is a note."""
    tasks, steps = loop_tasks(run), loop_steps(run)
    if tasks.empty:
        return None
    section = Section("Agent loop")
    if isinstance(prices, PriceTableError):
        section.notes.append(f"error: {prices}")
        prices = PriceTable(origin="(none: the price file was rejected)", prices={})
    section.tables.append(("steps and tool calls per task", steps_table(tasks)))
    section.tables.append(("why tasks ended", end_reasons(tasks)))
    if not steps.empty:
        section.tables.append(("context per step (tokens)", context_by_step(steps)))
        section.tables.append(("where a task's time went (ms)", time_split(tasks, steps)))
    ledger, warnings = task_ledger(tasks, prices)
    section.tables.append(("tokens and dollars per task", ledger))
    section.notes += [_ratio_note(tasks), *warnings]
    return section


def _ratio_note(tasks: pd.DataFrame) -> str:
    tokens_in, tokens_out = tasks[REQUEST.tokens_in].sum(), tasks[REQUEST.tokens_out].sum()
    head = f"{len(tasks)} tasks, {int(tasks['steps'].sum())} model calls"
    if not tokens_out:
        return f"{head}; no output tokens reported."
    return (
        f"{head}: {tokens_in / tokens_out:,.0f} input tokens per output token (an agent resends its "
        "system prompt, tool schemas and history every step); the cache floor prices every input token "
        "at the cached price."
    )
