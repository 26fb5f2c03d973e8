"""The rounds study's ledger through the generic path, small: a task agent's prompt is the workload's
synthetic text, the simulator's board gives it to each of the task's 2 LLM calls with the max_tokens the
workload asked (below the simulator's own reply length, so only a passed max_tokens gives 437), and the
dollars are exactly the read-back tokens times the study's price ($0.14 / $0.28 per M, cache reads
$0.014). The 225,000-token, 24-task run is docs/studies.md's."""

from __future__ import annotations

import pandas as pd
import pytest

from agents.gateways.task_board import TaskAgent
from analysis.cost import TOKEN_COLUMNS, cost_by_model, price_rows, usage_rows
from analysis.load import load_run
from analysis.prices import load_prices
from contract import schema
from scenarios.workloads.distributions import fixed
from scenarios.workloads.settings import WorkloadSettings
from tests.gateways.harness import agent_user

pytestmark = pytest.mark.e2e
MODEL = "deepseek-v4-flash"
CONTEXT, OUTPUT, CALLS, TASKS = 20_000, 437, 2, 3
SIM = ("--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "1000", "--task-llm-calls", str(CALLS))
BOARD = ("--task-seconds", "0.2", "--dispatch-interval", "0.1", "--worker-mib", "0", "--model", MODEL)


def test_task_prompts_of_the_asked_size_cost_exactly_their_tokens_at_the_studys_prices(simulator, tmp_path):
    gateway = simulator(*SIM, *BOARD)
    workload = WorkloadSettings(input=fixed(CONTEXT), output=fixed(OUTPUT))
    with agent_user(
        TaskAgent, gateway.url, tmp_path, workload=workload, model=MODEL, poll_interval=0.1
    ) as user:
        rows = [user.run_task(round_no=None) for _ in range(TASKS)]
    assert all(row is not None and row.status == "done" for row in rows), rows
    tasks = pd.read_csv(tmp_path / schema.TASKS_CSV)
    assert (tasks["llm_calls"] == CALLS).all() and (tasks["tokens_out"] == CALLS * OUTPUT).all()
    assert (tasks["tokens_in"] - CALLS * CONTEXT).abs().max() <= CALLS  # ceil(chars / 4), one per call
    submits = pd.read_csv(tmp_path / schema.REQUESTS_CSV).query("operation == 'task.submit'")
    assert (submits["asked_tokens_in"] == CONTEXT).all() and (submits["asked_tokens_out"] == OUTPUT).all()

    priced, warnings = price_rows(usage_rows(load_run(tmp_path))[0], load_prices())
    total = cost_by_model(priced).loc["total"]
    tokens_in, tokens_out = tasks["tokens_in"].sum(), tasks["tokens_out"].sum()
    assert not warnings and total["calls"] == TASKS * CALLS and total["tokens_in"] == tokens_in
    assert total["usd_list"] == pytest.approx((tokens_in * 0.14 + tokens_out * 0.28) / 1e6, rel=1e-12)
    assert total["usd_floor"] == pytest.approx((tokens_in * 0.014 + tokens_out * 0.28) / 1e6, rel=1e-12)


def test_the_studys_ledger_is_its_price_table_times_its_tokens():
    """24 tasks of 2 calls of 225,000 input and 437 output tokens: the study's ~$1.5 and ~$0.16."""
    frame = pd.DataFrame(
        {"model": [MODEL], "tokens_in": [48 * 225_000.0], "tokens_out": [48 * 437.0], "llm_calls": [48.0]}
    ).reindex(columns=["task_id", "model", "llm_calls", "gateway_cost_usd", *TOKEN_COLUMNS])
    total = cost_by_model(price_rows(frame, load_prices())[0]).loc["total"]
    assert round(total["usd_list"], 6) == 1.517873 and round(total["usd_floor"], 6) == 0.157073
