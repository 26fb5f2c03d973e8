"""Tool calls checked as an agent would (agents/loop/tool_checks.py) against a hostile model: the simulator's
`--bad-tool-calls MODE` makes every call malformed one way, which is the truth each step's error_kind is
read back against. With `[loop] on_bad_tool_call = "fail"` (the default) the step fails and the task ends
`error`; with "reply" the error goes back to the model as the call's tool result and the task goes on, so
the simulator's --tool-call-steps 2 gives tasks of 3 steps ending in an answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from agents.gateways.openai_chat import ChatAgent
from agents.gateways.responses import ResponsesAgent
from agents.loop.tool_checks import check_calls
from agents.loop.tool_deltas import ToolCall
from contract.exit_codes import REQUEST_ERRORS
from contract.schema import BAD_TOOL_CALL
from scenarios.workloads.settings import read_workload
from scenarios.workloads.tool_loop import synthetic_schemas
from simgateway.client import request
from tests.gateways.harness import agent_user, rows
from tests.locust_runs import run_locust

MODEL = ["--ttft-ms", "5", "--itl-ms", "1", "--output-tokens", "4", "--tool-call-steps", "2"]
WORKLOAD = '[tools]\ncount = 3\nschema_tokens = 60\nlatency = "1ms"\n\n[loop]\nmax_steps = 6\n'
# the simulator's mode -> the error_kind the kit must name
MODES = {
    "not-json": BAD_TOOL_CALL.tool_args_not_json,
    "schema": BAD_TOOL_CALL.tool_args_schema,
    "no-id": BAD_TOOL_CALL.tool_call_no_id,
    "unknown-name": BAD_TOOL_CALL.tool_unknown,
}
SCHEMAS = synthetic_schemas(2, 60)


@pytest.mark.parametrize(
    "call, kind",
    [
        (ToolCall("", "tool_1", '{"query": "x"}'), BAD_TOOL_CALL.tool_call_no_id),
        (ToolCall("a", "tool_9", '{"query": "x"}'), BAD_TOOL_CALL.tool_unknown),
        (ToolCall("b", "tool_1", '{"query": "x"'), BAD_TOOL_CALL.tool_args_not_json),
        (ToolCall("c", "tool_1", "[1]"), BAD_TOOL_CALL.tool_args_not_json),
        (ToolCall("d", "tool_1", '{"limit": 3}'), BAD_TOOL_CALL.tool_args_schema),
        (ToolCall("e", "tool_1", '{"query": ["x"]}'), BAD_TOOL_CALL.tool_args_schema),
        (ToolCall("f", "tool_1", '{"query": "x", "limit": true}'), BAD_TOOL_CALL.tool_args_schema),
        (ToolCall("g", "tool_1", '{"query": "x", "limit": 2.5}'), BAD_TOOL_CALL.tool_args_schema),
        (ToolCall("h", "tool_1", '{"query": "x", "limit": 3.0}'), None),
        (ToolCall("i", "tool_2", ""), BAD_TOOL_CALL.tool_args_schema),  # no arguments: `query` missing
    ],
)
def test_each_malformed_call_gets_its_own_error_kind(call, kind):
    (verdict,) = check_calls([call], SCHEMAS, set())
    assert (verdict.kind if verdict else None) == kind, verdict


def test_an_id_is_unique_in_the_task_across_its_steps():
    seen: set[str] = set()
    good = ToolCall("x", "tool_1", '{"query": "a"}')
    assert check_calls([good], SCHEMAS, seen) == [None]
    second, again = check_calls([ToolCall("y", "tool_1", '{"query": "a"}'), good], SCHEMAS, seen)
    assert second is None and again is not None and again.kind == BAD_TOOL_CALL.tool_call_duplicate_id


def loop_workload(tmp_path: Path, on_bad: str):
    path = tmp_path / "w.toml"
    path.write_text(WORKLOAD + f'on_bad_tool_call = "{on_bad}"\n')
    return read_workload(SimpleNamespace(workload_file=str(path)))


def one_task(simulator, tmp_path: Path, mode: str, on_bad: str, agent: str = "chat"):
    sim = simulator(*MODEL, "--bad-tool-calls", mode)
    user_class = ResponsesAgent if agent == "responses" else ChatAgent
    workload = loop_workload(tmp_path, on_bad)
    with agent_user(user_class, sim.url, tmp_path / "run", workload=workload) as user:
        (user.respond if agent == "responses" else user.chat_stream)()
    (task,) = rows(tmp_path / "run", "tasks.csv")
    return sim, task, rows(tmp_path / "run", "requests.csv")


@pytest.mark.e2e
@pytest.mark.parametrize("agent", ["chat", "responses"])
@pytest.mark.parametrize("mode", [*MODES, "duplicate-id"])
def test_a_bad_tool_call_fails_its_step_and_ends_the_task_error(simulator, tmp_path, mode, agent):
    _sim, task, requests = one_task(simulator, tmp_path, mode, "fail", agent)
    # a duplicate id is only a duplicate from the second call on: step 1 is run, step 2 fails
    failed_step = 2 if mode == "duplicate-id" else 1
    kind = MODES.get(mode, BAD_TOOL_CALL.tool_call_duplicate_id)
    assert (task["end_reason"], task["status"], task["steps"]) == ("error", "failed", str(failed_step)), task
    assert [r["ok"] for r in requests] == ["1"] * (failed_step - 1) + ["0"]
    assert requests[-1]["error_kind"] == kind and task["error"] == requests[-1]["error"]


@pytest.mark.e2e
@pytest.mark.parametrize("mode", [*MODES, "duplicate-id"])
def test_reply_sends_each_error_back_as_the_tool_result_and_the_task_goes_on(simulator, tmp_path, mode):
    sim, task, requests = one_task(simulator, tmp_path, mode, "reply")
    assert (task["end_reason"], task["status"], task["steps"]) == ("answer", "done", "3"), task
    kind = MODES.get(mode, BAD_TOOL_CALL.tool_call_duplicate_id)
    expected = ["1", "0", "1"] if mode == "duplicate-id" else ["0", "0", "1"]
    assert [r["ok"] for r in requests] == expected
    assert {r["error_kind"] for r in requests if r["ok"] == "0"} == {kind}
    logged = {c["id"]: c for c in request(sim.url, "GET", "/v1/sim/calls").json()["calls"]}
    assert [logged[r["request_id"]]["step"] for r in requests] == [1, 2, 3], "the simulator saw the replies"


@pytest.mark.e2e
def test_the_report_counts_the_bad_tool_calls_by_kind(simulator, tmp_path):
    sim = simulator(*MODEL, "--bad-tool-calls", "unknown-name")
    (tmp_path / "w.toml").write_text(WORKLOAD)
    smoke = ("--load-profile", "smoke", "--peak-users", "2", "--duration", "3s", "--think-time", "0")
    done = run_locust(
        tmp_path / "run", "ChatAgent", "--host", sim.url, *smoke, "--workload", str(tmp_path / "w.toml")
    )
    assert done.returncode == REQUEST_ERRORS, done.stderr[-2000:]
    tasks = pd.read_csv(tmp_path / "run" / "tasks.csv")
    ended = tasks[tasks["status"] != "unfinished"]
    assert len(ended) >= 5 and (ended["end_reason"] == "error").all()
    requests = pd.read_csv(tmp_path / "run" / "requests.csv")
    bad = int((requests["error_kind"] == BAD_TOOL_CALL.tool_unknown).sum())
    report = (tmp_path / "run" / "report.md").read_text()
    assert (
        "tool calls an agent could not run" in report
        and f"| {BAD_TOOL_CALL.tool_unknown} | {bad} |" in report
    )
    assert (
        json.loads((tmp_path / "run" / "run.json").read_text())["workload"]["tool_loop"]["on_bad_tool_call"]
        == "fail"
    )
