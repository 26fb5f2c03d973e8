"""Cost end to end: the simulator's token knobs are the truth; the kit reads usage in every dialect and
prices it exactly with the (fictional, round-numbered) sim-model entry of the shipped price table."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd
import pytest
from locust import constant

from agents.gateways.openai_chat import ChatAgent
from analysis.cost import cost_by_model, price_rows, usage_rows
from analysis.load import load_run
from analysis.model import RunData
from analysis.prices import load_prices
from contract import exit_codes
from tests.locust_runs import run_locust
from tests.locust_users import collect

FAST = ["--ttft-ms", "20", "--itl-ms", "1"]


class FastChatAgent(ChatAgent):
    wait_time = constant(0.05)


@pytest.mark.e2e
@pytest.mark.parametrize("dialect", ["openai", "deepseek", "anthropic", "responses"])
@pytest.mark.parametrize("stream", [True, False])
def test_every_usage_dialect_reads_back_the_knobs_streamed_and_not(simulator, dialect, stream):
    gateway = simulator(
        *FAST,
        "--prompt-tokens",
        "100",
        "--output-tokens",
        "7",
        "--cached-share",
        "0.25",
        "--usage-dialect",
        dialect,
    )
    user = type("DialectAgent", (FastChatAgent,), {"__init__": _with_settings(chat_stream=stream)})
    records = [e["context"]["kit_record"] for e in collect(user, gateway.url, users=2, count=4)]
    usage = {(r.tokens_in, r.tokens_cached, r.tokens_out) for r in records}
    assert usage == {(100, 25, 7)}, (dialect, stream, usage)


def _with_settings(**changes):
    """An __init__ that gives the agent its settings with `changes` (as the run would have set them)."""

    def __init__(self, environment):
        FastChatAgent.__init__(self, environment)
        self.settings = dataclasses.replace(self.settings, **changes)

    return __init__


@pytest.mark.e2e
def test_a_run_costs_exactly_its_tokens_times_the_price_table(tmp_path):
    run_dir = tmp_path / "run"
    sim = (
        "--ttft-ms 20 --itl-ms 1 --prompt-tokens 100 --output-tokens 10 --cached-share 0.5 "
        "--task-llm-calls 3 --task-seconds 1 --dispatch-interval 0.2"
    )
    done = run_locust(
        run_dir,
        "ChatAgent",
        "TaskAgent",
        "--load-profile",
        "manual",
        "-u",
        "2",
        "-r",
        "2",
        "-t",
        "6s",
        "--sim-args",
        sim,
        "--poll-interval",
        "0.2",
    )
    assert done.returncode == exit_codes.OK, done.stderr[-1500:]
    run = load_run(run_dir)
    # a stream the run's own stop cut short (error_kind interrupted) carries no usage and costs nothing
    chats = run.requests[(run.requests.operation == "chat.stream") & (run.requests.ok == 1)]
    tasks = run.tasks[run.tasks.status == "done"]
    assert len(chats) > 0 and len(tasks) > 0 and (run.tasks.status == "done").all()
    assert (tasks[["tokens_in", "tokens_cached", "tokens_out"]] == [300, 150, 30]).all().all()
    rows, source = usage_rows(run)
    assert source == "requests.csv and tasks.csv"
    total = cost_by_model(price_rows(rows, load_prices())[0]).loc["total"]
    assert total["calls"] == len(chats) + 3 * len(tasks)
    assert total["tokens_in"] == 100 * len(chats) + 300 * len(tasks)
    # sim-model: $1/M input, $0.10/M cached input, $2/M output
    per_chat_billed, per_chat_list = (50 * 1 + 50 * 0.1 + 10 * 2) / 1e6, (100 * 1 + 10 * 2) / 1e6
    assert total["usd_billed"] == pytest.approx(per_chat_billed * (len(chats) + 3 * len(tasks)), rel=1e-9)
    assert total["usd_list"] == pytest.approx(per_chat_list * (len(chats) + 3 * len(tasks)), rel=1e-9)
    assert "LLM cost" in done.stdout


def test_a_task_with_call_level_usage_is_not_counted_twice():
    requests = pd.DataFrame(
        {
            "task_id": ["t1"],
            "model": ["sim-model"],
            "tokens_in": [100.0],
            "tokens_out": [10.0],
            "operation": ["run"],
        }
    )
    tasks = pd.DataFrame(
        {
            "task_id": ["t1", "t2"],
            "model": ["sim-model"] * 2,
            "tokens_in": [100.0, 300.0],
            "tokens_out": [10.0, 30.0],
            "llm_calls": [1.0, 3.0],
        }
    )
    rows, source = usage_rows(RunData(path=Path("x"), meta={}, requests=requests, tasks=tasks))
    assert source == "requests.csv and tasks.csv"
    assert rows["tokens_in"].sum() == 400 and rows["llm_calls"].sum() == 4
