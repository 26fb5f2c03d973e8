"""The report's sub-agent figures from tasks.csv rows with known answers: the fan-out per parent, its
critical path (own time + longest child), the share of its time spent waiting, and the wait kept out of
the agent's own work in where a task's time went."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.agent_loop import loop_section, subagents_table, time_split
from analysis.model import RunData
from analysis.prices import parse_prices

PRICES = parse_prices(
    '[models."m"]\ninput = 1.0\ncached_input = 0.1\ncache_write = 1.0\noutput = 2.0\n'
    'currency = "USD"\nas_of = "2026-12"\nsource = "test"\n'
)


def tasks() -> pd.DataFrame:
    """p: 1000 ms, 600 of them waiting for 3 children (longest 550); q: 400 ms, 2 children (longest 150)."""
    return pd.DataFrame(
        {
            "task_id": ["p", "p-s1", "p-s2", "p-s3", "q", "q-s1", "q-s2"],
            "parent_task_id": [None, "p", "p", "p", None, "q", "q"],
            "children_wait_ms": [600.0, np.nan, np.nan, np.nan, 200.0, np.nan, np.nan],
            "total_ms": [1000.0, 550.0, 500.0, 300.0, 400.0, 150.0, 100.0],
            "tool_ms": [0.0] * 7,
            "steps": [2, 2, 2, 2, 2, 1, 1],
            "tool_calls": [1, 1, 1, 1, 1, 0, 0],
            "end_reason": ["answer"] * 7,
            "tokens_in": [10] * 7,
            "tokens_cached": [0] * 7,
            "tokens_out": [1] * 7,
            "gateway_cost_usd": [np.nan] * 7,
            "model": ["m"] * 7,
        }
    )


def test_fan_out_critical_path_and_the_share_waiting_per_parent():
    table = subagents_table(tasks())
    fan_out = table.loc["sub-agents per parent (fan-out)"]
    assert (fan_out["n"], fan_out["p50"], fan_out["max"]) == (2, 2.5, 3.0)
    critical = table.loc["critical path (ms): the parent's own time + its longest child"]
    assert critical["max"] == pytest.approx(1000 - 600 + 550) and critical["n"] == 2  # q: 400 - 200 + 150
    assert critical["p50"] == pytest.approx((950 + 350) / 2)
    waiting = table.loc["waiting for sub-agents (% of the parent's time)"]
    assert waiting["max"] == pytest.approx(60.0) and waiting["p50"] == pytest.approx(55.0)
    assert table.loc["a sub-agent's time (ms)", "n"] == 5


def test_no_parent_no_table_and_the_wait_is_not_the_agents_own_work():
    assert subagents_table(tasks().drop(columns="parent_task_id")).empty
    assert subagents_table(tasks().assign(parent_task_id=None)).empty
    steps = pd.DataFrame({"task_id": ["p", "p"], "step": [1, 2], "latency_ms": [100.0, 100.0], "ok": [1, 1]})
    split = time_split(tasks().iloc[:1], steps)
    assert split.loc["waiting for sub-agents", "max"] == 600.0
    assert split.loc["the agent's own work", "max"] == pytest.approx(1000 - 200 - 600)


def test_the_section_shows_the_table_and_the_overall_share():
    section = loop_section(RunData(Path("."), {}, requests=None, tasks=tasks()), PRICES)
    assert section is not None
    titles = [title for title, _ in section.tables]
    assert "sub-agents: fan-out, critical path, the parent's wait" in titles
    assert any("2 tasks spawned sub-agents" in n and "57 % of their time" in n for n in section.notes)
