"""The Agent loop section from known rows: steps and end reasons per task, the context per step with its
growth, model vs tool time, and dollars per task at list price and at the cache floor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.agent_loop import context_by_step, loop_section, task_ledger, time_split
from analysis.model import RunData
from analysis.prices import parse_prices

PRICES = parse_prices(
    '[models."m"]\ninput = 1.0\ncached_input = 0.1\ncache_write = 1.0\noutput = 2.0\n'
    'currency = "USD"\nas_of = "2026-12"\nsource = "test"\n'
)


def steps_of(task: str, tokens_in: list[int], latency_ms: float) -> list[dict]:
    last = len(tokens_in)
    return [
        {
            "task_id": task,
            "ok": 1,
            "step": i,
            "tokens_in": t,
            "tokens_cached": 0,
            "tokens_out": 10,
            "tool_calls": 0 if i == last else 1,
            "first_token_kind": "content" if i == last else "tool_call",
            "latency_ms": latency_ms,
        }
        for i, t in enumerate(tokens_in, 1)
    ]


def run() -> RunData:
    requests = pd.DataFrame(steps_of("a", [1000, 1500, 2000], 100.0) + steps_of("b", [1000, 1500], 50.0))
    tasks = pd.DataFrame(
        {
            "task_id": ["a", "b", "c"],
            "steps": [3, 2, np.nan],  # c: a task board's task, not the loop's
            "tool_calls": [2, 1, np.nan],
            "end_reason": ["answer", "max_steps", None],
            "total_ms": [400.0, 300.0, 50.0],
            "tool_ms": [90.0, 150.0, np.nan],
            "tokens_in": [4500, 2500, 9],
            "tokens_cached": [0, 0, 0],
            "tokens_out": [30, 20, 1],
            "gateway_cost_usd": [np.nan, np.nan, np.nan],
            "model": ["m", "m", "m"],
        }
    )
    return RunData(Path("."), {}, requests=requests, tasks=tasks)


def test_context_per_step_shows_the_growth_and_the_first_token():
    table = context_by_step(run().requests)
    assert list(table["tokens_in_median"]) == [1000, 1500, 2000]
    assert list(table["growth_median"].fillna(0)) == [0, 500, 500]
    assert list(table["calls"]) == [2, 2, 1] and list(table["first_token"]) == [
        "tool_call",
        "content, tool_call",
        "content",
    ]


def test_time_split_sums_model_and_tool_time_per_task():
    data = run()
    table = time_split(data.tasks.iloc[:2], data.requests)
    assert table.loc["waiting for the model", "max"] == 300.0 and table.loc["running tools", "max"] == 150.0
    assert table.loc["the agent's own work", "max"] == pytest.approx(50.0)  # b: 300 - 2 x 50 - 150; a: 10
    assert table.loc["end to end", "share_pct"] == pytest.approx(100.0)


def test_dollars_per_task_at_list_price_and_the_cache_floor():
    table, warnings = task_ledger(run().tasks.iloc[:2], PRICES)
    assert warnings == []
    assert table.loc["$ at list price", "max"] == pytest.approx((4500 * 1.0 + 30 * 2.0) / 1e6)
    assert table.loc["$ at the cache floor", "max"] == pytest.approx((4500 * 0.1 + 30 * 2.0) / 1e6)
    assert table.loc["$ per step, as billed", "max"] == pytest.approx((4500 + 60) / 1e6 / 3)
    assert "$ the gateway reported" not in table.index, "a figure nobody reported is left out"


def test_the_section_counts_loop_tasks_only_and_their_end_reasons():
    section = loop_section(run(), PRICES)
    assert section is not None
    tables = dict(section.tables)
    assert list(tables["why tasks ended"].index) == ["answer", "max_steps"]
    assert "2 tasks, 5 model calls: 140 input tokens per output token" in section.notes[0]
    assert loop_section(RunData(Path("."), {}, tasks=run().tasks.iloc[2:]), PRICES) is None
