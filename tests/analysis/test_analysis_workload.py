"""The report's Workload section from known rows: asked vs reported per call (a task's usage split over
its calls), the warning past 10 % for input and its absence within, the note for output below its
max_tokens, tokens and dollars per call and per task."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.model import RunData
from analysis.prices import parse_prices
from analysis.summary import console_summary
from analysis.summary_json import summary
from analysis.workload import asked_and_reported, disagreements, size_table, workload_section
from contract import schema

PRICES = parse_prices(
    '[models."m"]\ninput = 1.0\ncached_input = 0.1\ncache_write = 1.0\noutput = 2.0\n'
    'currency = "USD"\nas_of = "2026-12-01"\nsource = "test"\nfictional = true\n'
)


def requests(asked_in, reported_in, asked_out=10, reported_out=10, **extra) -> pd.DataFrame:
    n = len(asked_in)
    frame = pd.DataFrame({c: [np.nan] * n for c in schema.REQUEST_COLUMNS})
    frame = frame.assign(
        ts=np.arange(n, dtype=float),
        agent_id="a",
        operation="chat",
        ok=1,
        model="m",
        asked_tokens_in=asked_in,
        tokens_in=reported_in,
        asked_tokens_out=asked_out,
        tokens_out=reported_out,
        **extra,
    )
    return frame


def run(frame: pd.DataFrame, tasks: pd.DataFrame | None = None, workload: dict | None = None) -> RunData:
    return RunData(
        path=Path("."), meta={"workload": workload} if workload else {}, requests=frame, tasks=tasks
    )


def test_asked_and_reported_per_call_with_percentiles_and_the_difference():
    asked = list(range(1000, 3000, 10))  # 200 requests
    sizes = size_table(asked_and_reported(run(requests(asked, [a * 1.02 for a in asked]))))
    row = sizes.loc["input tokens per call"]
    assert row["n"] == 200 and row["asked_p5"] == pytest.approx(np.percentile(asked, 5))
    assert row["reported_mean"] == pytest.approx(1.02 * np.mean(asked)) and row["diff_pct"] == pytest.approx(
        2.0
    )
    assert disagreements(sizes) == []  # 2 %: within the 10 % rule


def test_input_off_by_more_than_10_percent_is_a_warning_and_output_below_max_tokens_a_note():
    sizes = size_table(
        asked_and_reported(run(requests([2000] * 5, [2300] * 5, asked_out=64, reported_out=20)))
    )
    warning, note = disagreements(sizes)
    assert warning.startswith("warning: the gateway's input tokens differ") and "+15.0 %" in warning
    assert note.startswith("output tokens below the max_tokens sent") and "ceiling" in note


def test_output_above_max_tokens_is_a_warning():
    sizes = size_table(asked_and_reported(run(requests([100] * 3, [100] * 3, asked_out=10, reported_out=50))))
    assert disagreements(sizes)[0].startswith("warning: output tokens above the max_tokens sent")


def test_a_submitted_task_reports_its_usage_per_llm_call():
    submits = requests([500, 700], [np.nan, np.nan], asked_out=[30, 30], reported_out=[np.nan, np.nan])
    submits = submits.assign(operation="task.submit", ts=[10.0, 20.0])
    tasks = pd.DataFrame(
        {
            "task_id": ["t1", "t2"],
            "agent_id": ["a", "a"],
            "submitted_ts": [10.01, 20.02],
            "tokens_in": [1000.0, 1400.0],
            "tokens_out": [60.0, 60.0],
            "llm_calls": [2.0, 2.0],
            "model": ["m", "m"],
        }
    )
    pairs = asked_and_reported(run(submits, tasks))
    assert pairs["reported_in"].tolist() == [500.0, 700.0] and pairs["reported_out"].tolist() == [30.0, 30.0]


def test_the_section_describes_the_workload_and_prices_per_call_and_per_task():
    frame = requests([1000] * 4, [1000] * 4, task_id=["t1", "t1", "t2", "t2"])
    workload = {"seed": 3, "input_tokens": "fixed 1000", "prefix_tokens": 0, "think_time": "fixed 0s"}
    section = workload_section(run(frame, workload=workload), PRICES)
    assert section is not None and section.notes[0].startswith("workload: seed 3; input: fixed 1000")
    usage = dict(section.tables)["tokens and dollars (means)"]
    assert usage.loc["per call", "usd_list"] == pytest.approx((1000 * 1.0 + 10 * 2.0) / 1e6)
    assert usage.loc["per task", "tokens_in"] == 2000 and usage.loc["per task", "count"] == 2
    assert any("m as of 2026-12-01" in n for n in section.notes)


def test_a_run_with_no_workload_says_it_sent_each_agents_fixed_prompt():
    frame = requests([np.nan] * 3, [20] * 3, asked_out=64, reported_out=20)
    section = workload_section(run(frame), PRICES)
    assert section is not None and section.notes[0].startswith("workload: each agent's fixed short prompt")
    assert list(dict(section.tables)["asked vs reported by the gateway"].index) == ["output tokens per call"]


def test_one_call_in_twenty_off_by_over_5_percent_warns_though_the_means_agree():
    asked = [64] * 20 + [2000] * 20  # short prompts 20 % too large, long ones 0.5 % too small
    reported = [64 * 1.2] * 20 + [2000 * 0.995] * 20
    sizes = size_table(asked_and_reported(run(requests(asked, reported))))
    row = sizes.loc["input tokens per call"]
    assert abs(row["diff_pct"]) < 1 and row["call_error_p95_pct"] == pytest.approx(20.0)
    (warning,) = disagreements(sizes)
    assert warning.startswith("warning: one input in twenty is off its asked size by over 20.0 %"), warning


def test_sizes_no_usage_confirmed_are_called_unverified_in_the_report_console_and_summary(tmp_path):
    silent = run(requests([500] * 4, [np.nan] * 4, reported_out=[np.nan] * 4))
    section = workload_section(silent, PRICES)
    assert any(
        n.startswith("warning: sizes unverified: the gateway reported no input tokens") for n in section.notes
    )
    assert "sizes unverified: the gateway reported no input tokens for the 4 calls" in console_summary(silent)
    sizes = summary(silent)["sizes"]
    assert sizes["verified"] is False and sizes["note"].startswith("sizes unverified")
    counted = summary(run(requests([500] * 4, [505] * 4)))["sizes"]
    assert counted["verified"] is True and counted["input"]["call_error_p95_pct"] == pytest.approx(1.0)
