"""The agent loop's section of the report: steps per task and why tasks ended, context tokens per step (the
growth curve), tool time vs model time, tokens and dollars per task and per step with the cache floor, and
a step's sub-agents: the fan-out, the critical path and the share of the parent's time spent waiting.

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
from contract.schema import BAD_TOOL_CALL_KINDS, MCP_PREFIX, REQUEST, TASK, TASK_STATUS

PERCENTILES = (50, 95)
SHOWN_STEPS = 12  # steps 1..11 and the last are listed


def loop_tasks(run: RunData) -> pd.DataFrame:
    """The tasks.csv rows of agent-loop tasks (those with a step count)."""
    tasks = run.tasks
    if tasks is None or "steps" not in tasks or tasks["steps"].isna().all():
        return pd.DataFrame()
    return tasks[tasks["steps"].notna()]


def loop_steps(run: RunData) -> pd.DataFrame:
    """requests.csv rows that are model calls of an agent-loop task (an MCP tool call of a step carries
    the step too: it is tool time, not a step)."""
    requests = run.requests
    if requests is None or "step" not in requests:
        return pd.DataFrame()
    operations = requests.get(REQUEST.operation, pd.Series("", index=requests.index))
    model = ~operations.astype(str).str.startswith(MCP_PREFIX)
    return requests[requests["step"].notna() & requests["task_id"].notna() & model]


def end_reasons(tasks: pd.DataFrame) -> pd.DataFrame:
    """Tasks per end reason (answer, max_steps, error), with steps and tool calls of each."""
    grouped = tasks.groupby(tasks[TASK.end_reason].fillna(TASK_STATUS.unfinished))
    table = grouped.agg(
        tasks=("task_id", "size"), steps_mean=("steps", "mean"), tool_calls_mean=("tool_calls", "mean")
    )
    table["share_pct"] = table["tasks"] / table["tasks"].sum() * 100
    return table


def bad_tool_calls(tasks: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """Steps whose tool calls an agent could not run (agents/loop/tool_checks.py), per error_kind: the steps,
    the tasks they were in, and how many of those tasks ended in error (the rest were replied to)."""
    if REQUEST.error_kind not in steps:
        return pd.DataFrame()
    bad = steps[steps[REQUEST.error_kind].isin(BAD_TOOL_CALL_KINDS)]
    if bad.empty:
        return pd.DataFrame()
    ended = tasks.set_index("task_id")[TASK.end_reason]
    grouped = bad.groupby(REQUEST.error_kind)["task_id"]
    table = pd.DataFrame({"steps": grouped.size(), "tasks": grouped.nunique()})
    table["tasks_ended_error"] = grouped.agg(lambda ids: int((ended.reindex(ids.unique()) == "error").sum()))
    table["share_pct"] = table["steps"] / len(steps) * 100  # of all the loop's steps
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
    if ok.empty:  # every step failed (a model whose every tool call was malformed)
        return pd.DataFrame()
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
    waits = _children_waits(tasks).reindex(frame.index)
    parts = {
        "model_ms": "waiting for the model",
        TASK.tool_ms: "running tools",
    }
    if waits.notna().any():  # a parent's wait for its sub-agents is neither the model's nor its own
        frame[TASK.children_wait_ms] = waits
        parts[TASK.children_wait_ms] = "waiting for sub-agents"
    known = frame["model_ms"] + frame[TASK.tool_ms] + waits.fillna(0.0)
    frame["other_ms"] = (frame[TASK.total_ms] - known).clip(lower=0)
    parts["other_ms"] = "the agent's own work"
    parts[TASK.total_ms] = "end to end"
    table = _described({words: frame[name] for name, words in parts.items()})
    shares = frame[list(parts)].sum() / frame[TASK.total_ms].sum() * 100
    table["share_pct"] = shares.rename(index=parts)  # aligned by row: a row left out has none
    return table


def _children_waits(tasks: pd.DataFrame) -> pd.Series:
    """Each task's wait for its sub-agents (ms; NaN: it spawned none), by task id."""
    waits = tasks.get(TASK.children_wait_ms, pd.Series(np.nan, index=tasks.index))
    return pd.Series(waits.astype(float).to_numpy(), index=tasks["task_id"])


def subagents_table(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per parent (a task whose step spawned sub-agents): its children (the fan-out), its critical path
    (its own time, the wait left out, plus its longest child's) and the share of its time it waited for
    them; and a sub-agent's own time. Empty when no task had a parent."""
    if TASK.parent_task_id not in tasks or tasks[TASK.parent_task_id].isna().all():
        return pd.DataFrame()
    children = tasks[tasks[TASK.parent_task_id].notna()]
    by_parent = children.groupby(TASK.parent_task_id)
    fan_out = by_parent.size()
    parents = tasks.set_index("task_id").reindex(fan_out.index)  # a parent cut before its row: NaN
    total = parents[TASK.total_ms].astype(float)
    wait = _children_waits(tasks).reindex(fan_out.index)
    return _described(
        {
            "sub-agents per parent (fan-out)": fan_out.astype(float),
            "critical path (ms): the parent's own time + its longest child": (
                total - wait + by_parent[TASK.total_ms].max()
            ),
            "waiting for sub-agents (% of the parent's time)": wait / total * 100,
            "a sub-agent's time (ms)": children[TASK.total_ms].astype(float),
        }
    )


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
    bad = bad_tool_calls(tasks, steps) if not steps.empty else pd.DataFrame()
    if not bad.empty:
        section.tables.append(("tool calls an agent could not run (steps failed)", bad))
        section.notes.append(_bad_calls_note(bad))
    if not steps.empty:
        context = context_by_step(steps)
        if not context.empty:
            section.tables.append(("context per step (tokens)", context))
        section.tables.append(("where a task's time went (ms)", time_split(tasks, steps)))
    subagents = subagents_table(tasks)
    if not subagents.empty:
        section.tables.append(("sub-agents: fan-out, critical path, the parent's wait", subagents))
        section.notes.append(_subagents_note(tasks))
    ledger, warnings = task_ledger(tasks, prices)
    section.tables.append(("tokens and dollars per task", ledger))
    section.notes += [_ratio_note(tasks), *warnings]
    return section


def _bad_calls_note(bad: pd.DataFrame) -> str:
    steps, ended = int(bad["steps"].sum()), int(bad["tasks_ended_error"].sum())
    return (
        f"{steps} steps answered with tool calls an agent could not run (no or a repeated id, a tool not "
        f"offered, arguments not JSON or not matching the schema): each a failed request; {ended} of their "
        "tasks ended in error, the others sent the error back as the tool result ([loop] on_bad_tool_call)."
    )


def _subagents_note(tasks: pd.DataFrame) -> str:
    waits = _children_waits(tasks)
    parents = tasks[tasks["task_id"].isin(waits.dropna().index)]
    share = waits.sum() / parents[TASK.total_ms].astype(float).sum() * 100
    return (
        f"{len(parents)} tasks spawned sub-agents ([subagents]) and spent {share:.0f} % of their time "
        "waiting for them; a parent's critical path is its own time plus its longest child's, and its end "
        "to end exceeds that by the spawn's own cost (starting the children, noticing the last one end)."
    )


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
