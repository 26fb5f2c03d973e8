"""The agent loop against the simulator's scripted model, whose own log (GET /v1/sim/calls) is the truth:
a model that calls tools for 3 steps gives tasks of exactly 4 steps and 3 tool calls whose context grows
by what was appended, priced per task as the sum of its steps; a model that never stops ends at
max_steps; the Responses agent and the unstreamed chat loop the same way.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from agents.gateways.openai_chat import ChatAgent
from agents.gateways.responses import ResponsesAgent
from analysis.cost import price_rows, task_costs
from analysis.load import load_run
from analysis.prices import load_prices
from contract.exit_codes import OK, THRESHOLD_FAILED
from scenarios.workloads.settings import read_workload
from scenarios.workloads.tool_loop import synthetic_schemas
from simgateway.client import request
from tests.gateways.harness import agent_user, rows
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e
MODEL = ["--ttft-ms", "5", "--itl-ms", "1", "--output-tokens", "4"]
# the simulator's price = prices.toml's sim-model list price ($1 / $2 per M): its cost is the kit's
PRICED = ["--report-cost", "--price-in-per-m", "1", "--price-out-per-m", "2", "--price-cached-per-m", "0.1"]
RESULT_TOKENS = 50
SCHEMA_TOKENS = round(len(json.dumps(list(synthetic_schemas(3, 100)), separators=(",", ":"))) / 4)
WORKLOAD = f"""[tools]
count = 3
schema_tokens = 100
result = {RESULT_TOKENS}
latency = "10ms"

[loop]
max_steps = 10
"""


def workload_file(tmp_path: Path, text: str = WORKLOAD) -> Path:
    path = tmp_path / "w.toml"
    path.write_text(text)
    return path


def sim_calls(url: str) -> dict[str, dict]:
    """The simulator's log of the calls it answered, by response id."""
    return {c["id"]: c for c in request(url, "GET", "/v1/sim/calls").json()["calls"]}


def test_three_tool_steps_then_an_answer_make_tasks_of_4_steps_priced_as_their_sum(simulator, tmp_path):
    sim = simulator(*MODEL, *PRICED, "--tool-call-steps", "3")
    run_dir = tmp_path / "run"
    smoke = ("--load-profile", "smoke", "--peak-users", "3", "--duration", "4s", "--think-time", "0")
    workload = ("--workload", str(workload_file(tmp_path)), "--input-tokens", "400")
    done = run_locust(run_dir, "ChatAgent", "--host", sim.url, *smoke, *workload)
    assert done.returncode == OK, done.stderr[-2000:]
    tasks = pd.read_csv(run_dir / "tasks.csv")
    finished = tasks[tasks["status"] != "unfinished"]
    assert len(finished) >= 20 and (finished["end_reason"] == "answer").all(), tasks[
        "end_reason"
    ].value_counts()
    assert (finished["steps"] == 4).all() and (finished["tool_calls"] == 3).all()
    assert (finished["tool_ms"] >= 3 * 10).all(), "three steps' tool runs of 10 ms each"
    requests = pd.read_csv(run_dir / "requests.csv")
    truth = sim_calls(sim.url)
    checked = 0
    for task_id, steps in requests[requests["task_id"].isin(finished["task_id"])].groupby("task_id"):
        steps = steps.sort_values("step")
        assert list(steps["step"]) == [1, 2, 3, 4] and list(steps["tool_calls"]) == [1, 1, 1, 0]
        assert list(steps["first_token_kind"]) == ["tool_call"] * 3 + ["content"]
        asked = list(steps["asked_tokens_in"])  # the prompt asked plus the 3 schemas, on step 1 only
        assert asked[0] == 400 + SCHEMA_TOKENS and all(pd.isna(a) for a in asked[1:]), asked
        assert abs(steps["tokens_in"].iloc[0] - asked[0]) <= 0.03 * asked[0]
        logged = [truth[r] for r in steps["request_id"] if r in truth]
        if len(logged) < 4:
            continue  # older than the simulator's last 1,000 calls
        assert list(steps["tokens_in"]) == [c["prompt_tokens"] for c in logged], task_id
        for before, after in zip(logged, logged[1:], strict=False):
            (call,) = before["tool_calls"]
            appended = (len(call["name"]) + len(call["arguments"])) / 4 + RESULT_TOKENS
            assert abs(after["prompt_tokens"] - before["prompt_tokens"] - appended) <= 2, (before, after)
        row = finished.set_index("task_id").loc[task_id]
        assert row["tokens_in"] == steps["tokens_in"].sum() and row["tokens_out"] == steps["tokens_out"].sum()
        assert row["gateway_cost_usd"] == pytest.approx(steps["gateway_cost_usd"].sum(), rel=1e-9)
        checked += 1
    assert checked >= 20, "tasks read back against the simulator's log"
    kit = task_costs(load_run(run_dir), load_prices())
    steps_priced, _ = price_rows(requests.assign(llm_calls=1.0), load_prices())
    by_steps = steps_priced.groupby("task_id")["usd_billed"].sum()
    for task_id in finished["task_id"]:
        assert kit.loc[task_id, "usd_billed"] == pytest.approx(by_steps[task_id], rel=1e-9)
        assert kit.loc[task_id, "usd_billed"] == pytest.approx(kit.loc[task_id, "usd_gateway"], rel=1e-6)
    report = (run_dir / "report.md").read_text()
    assert "## Agent loop" in report and "| answer |" in report


def loop_settings(tmp_path: Path, text: str = WORKLOAD):
    return read_workload(SimpleNamespace(workload_file=str(workload_file(tmp_path, text))))


def test_a_model_that_never_stops_calling_tools_ends_at_max_steps(simulator, tmp_path):
    sim = simulator(*MODEL, "--tool-call-steps", "1000", "--tool-calls-per-step", "2")
    workload = loop_settings(tmp_path, WORKLOAD.replace("max_steps = 10", "max_steps = 3"))
    with agent_user(ChatAgent, sim.url, tmp_path / "run", workload=workload) as user:
        user.chat_stream()
        user.chat_stream()
    tasks = rows(tmp_path / "run", "tasks.csv")
    assert [(t["end_reason"], t["status"], t["steps"], t["tool_calls"]) for t in tasks] == [
        ("max_steps", "failed", "3", "6")
    ] * 2
    assert tasks[0]["error"] == "no answer after 3 steps"
    requests = rows(tmp_path / "run", "requests.csv")
    assert len(requests) == 6 and {r["tool_calls"] for r in requests} == {"2"}


@pytest.mark.parametrize("agent", ["responses", "chat-unstreamed"])
def test_the_responses_agent_and_the_unstreamed_chat_loop_the_same_way(simulator, tmp_path, agent):
    sim = simulator(*MODEL, "--tool-call-steps", "2", "--tool-calls-per-step", "2")
    user_class = ResponsesAgent if agent == "responses" else ChatAgent
    options = {"responses_stream": True} if agent == "responses" else {"chat_stream": False}
    with agent_user(
        user_class, sim.url, tmp_path / "run", workload=loop_settings(tmp_path), **options
    ) as user:
        (user.respond if agent == "responses" else user.chat_stream)()
    (task,) = rows(tmp_path / "run", "tasks.csv")
    assert (task["end_reason"], task["steps"], task["tool_calls"]) == ("answer", "3", "4"), task
    requests = rows(tmp_path / "run", "requests.csv")
    assert [r["tool_calls"] for r in requests] == ["2", "2", "0"]
    expected_kind = ["tool_call", "tool_call", "content"] if agent == "responses" else [""] * 3
    assert [r["first_token_kind"] for r in requests] == expected_kind
    truth = sim_calls(sim.url)
    logged = [truth[r["request_id"]] for r in requests]
    assert [c["step"] for c in logged] == [1, 2, 3], "the simulator saw the history the loop appended"
    assert [int(r["tokens_in"]) for r in requests] == [c["prompt_tokens"] for c in logged]
    assert len(logged[0]["tools_offered"]) == 3
    assert requests[0]["asked_tokens_in"] == "", "a fixed prompt: no input size asked"
    arguments = [json.loads(t["arguments"]) for c in logged for t in c["tool_calls"]]
    assert all(set(a) == {"query", "limit"} for a in arguments)


def test_tasks_that_end_at_max_steps_count_in_the_headline_and_fail_a_done_tasks_threshold(
    simulator, tmp_path
):
    """Every request answers (no failed request) but no task finishes: the headline counts the tasks not
    done and why, summary.json too, and `task_failure_rate < 0.01` fails the run (99)."""
    sim = simulator(*MODEL, "--tool-call-steps", "1000")
    run_dir = tmp_path / "run"
    smoke = ("--load-profile", "smoke", "--peak-users", "2", "--duration", "3s", "--think-time", "0")
    workload = (
        "--workload",
        str(workload_file(tmp_path, WORKLOAD.replace("max_steps = 10", "max_steps = 2"))),
    )
    done = run_locust(
        run_dir, "ChatAgent", "--host", sim.url, *smoke, *workload, "--threshold", "task_failure_rate < 0.01"
    )
    assert done.returncode == THRESHOLD_FAILED, done.stdout[-2000:] + done.stderr[-2000:]
    tasks = pd.read_csv(run_dir / "tasks.csv")
    ended = tasks[tasks["status"] != "unfinished"]
    assert len(ended) >= 4 and (ended["end_reason"] == "max_steps").all()
    assert f"tasks not done: {len(ended)} of {len(ended)} (max_steps {len(ended)})" in done.stdout, (
        done.stdout
    )
    assert "failed requests: 0" in done.stdout
    summary = json.loads((run_dir / "summary.json").read_text())["tasks"]
    assert summary["not_done"] == len(ended) and summary["why"] == {"max_steps": len(ended)}, summary
