"""One tokens total, its scope named: the report's Run summary and the console count the same calls as
the Cost table (a task board's calls, in tasks.csv, included; the Run summary counted requests.csv alone)."""

from __future__ import annotations

import pandas as pd

from analysis.load import load_run
from analysis.model_calls import model_calls_section
from analysis.summary import console_summary, run_summary_table
from contract.schema import MODEL_CALL_COLUMNS, MODEL_CALLS_CSV
from tests.synthetic import T0, stream_requests, write_run_dir


def test_run_summary_and_console_give_one_tokens_total_with_its_scope(tmp_path):
    chats = stream_requests(10, 10, error_rate=0)  # 500 in, 30 out each
    tasks = pd.DataFrame(
        {"ts": T0 + 5, "task_id": ["t1", "t2"], "status": "done", "tokens_in": 1000, "tokens_out": 100}
    ).assign(llm_calls=2)
    meta = {"run_id": "r1", "profile": {"name": "smoke"}, "start_ts": T0, "end_ts": T0 + 10}
    run = load_run(write_run_dir(tmp_path, meta, requests=chats, tasks=tasks))
    total = (
        "7,000 / 500 (every LLM call the kit recorded, from requests.csv and tasks.csv; calls the gateway "
        "made on its own: not visible (the model is not the kit's))"
    )
    assert run_summary_table(run).loc["tokens in / out", "value"] == total
    assert f"tokens in / out: {total}" in console_summary(run)


def test_the_model_calls_section_compares_like_with_like_and_prices_the_models_calls(tmp_path):
    """A task board's calls are in tasks.csv and at the model, not in requests.csv: both sides count them
    (0 % apart, not +111 %), the model's calls are priced at the price table (the simulator's own prices
    are 0: that column is left out), and the console names the model's own count beside the kit's."""
    chats = stream_requests(10, 10, error_rate=0).assign(
        model="sim-model", request_id=[f"r{i}" for i in range(10)]
    )
    tasks = pd.DataFrame(
        {"ts": T0 + 5, "task_id": ["t1"], "status": "done", "tokens_in": 8, "tokens_out": 40, "llm_calls": 2}
    ).assign(model="sim-model")
    calls = pd.DataFrame(
        {
            "ts": [T0 + 1] * 12,
            "response_id": [f"r{i}" for i in range(10)] + ["b1", "b2"],
            "tokens_in": [500] * 10 + [4, 4],
            "tokens_cached": 0,
            "tokens_out": [30] * 10 + [20, 20],
            "tool_calls": 0,
            "cost_usd": 0.0,
        }
    )
    meta = {"run_id": "r1", "profile": {"name": "smoke"}, "start_ts": T0, "end_ts": T0 + 10}
    run_dir = write_run_dir(tmp_path, meta, requests=chats, tasks=tasks)
    calls.reindex(columns=list(MODEL_CALL_COLUMNS)).to_csv(run_dir / MODEL_CALLS_CSV, index=False)
    run = load_run(run_dir)
    section = model_calls_section(run)
    beside = dict(section.tables)["the model's count beside the kit's"]
    for measure, value in (("LLM calls", 12), ("input tokens", 5008), ("output tokens", 340)):
        assert beside.loc[measure].tolist() == [value, value, 0.0], beside
    by_maker = dict(section.tables)["who made the calls the model answered"]
    assert "$ at the model's prices" not in by_maker and by_maker["$ at the price table's rates"].sum() > 0
    assert "tasks.csv counts 2 calls a task board's workers made" in " ".join(section.notes)
    assert (
        "tokens in / out: 5,008 / 340 (every LLM call, from requests.csv and tasks.csv; at the model: "
        in (console_summary(run))
    )
