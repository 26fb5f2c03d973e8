"""One tokens total, its scope named: the report's Run summary and the console count the same calls as
the Cost table (a task board's calls, in tasks.csv, included; the Run summary counted requests.csv alone)."""

from __future__ import annotations

import pandas as pd

from analysis.load import load_run
from analysis.summary import console_summary, run_summary_table
from tests.synthetic import T0, stream_requests, write_run_dir


def test_run_summary_and_console_give_one_tokens_total_with_its_scope(tmp_path):
    chats = stream_requests(10, 10, error_rate=0)  # 500 in, 30 out each
    tasks = pd.DataFrame(
        {"ts": T0 + 5, "task_id": ["t1", "t2"], "status": "done", "tokens_in": 1000, "tokens_out": 100}
    ).assign(llm_calls=2)
    meta = {"run_id": "r1", "profile": {"name": "smoke"}, "start_ts": T0, "end_ts": T0 + 10}
    run = load_run(write_run_dir(tmp_path, meta, requests=chats, tasks=tasks))
    total = "7,000 / 500 (every LLM call, from requests.csv and tasks.csv)"
    assert run_summary_table(run).loc["tokens in / out", "value"] == total
    assert f"tokens in / out: {total}" in console_summary(run)
