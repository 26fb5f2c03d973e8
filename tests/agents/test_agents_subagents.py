"""Sub-agents against the simulator's scripted model, whose own call log (GET /v1/sim/calls) is the truth:
a planner step that spawns 3 sub-agents of 2 steps each runs 3 conversations at once, and the parent's next
model call arrives only after the last child's last call ended; tasks.csv has the 3 children's rows with
the parent's task id, and the parent's wait for them.

Timing truth: every call's stream lasts at least --ttft-ms (300 ms) from its arrival, which the log stamps
(a millisecond or so late): a call logged before another's stamp + 250 ms was in flight beside it, and a
call logged 250 ms or more after another's stamp arrived after that one ended.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import gevent
import pytest

from agents.gateways.openai_chat import ChatAgent
from analysis.agent_loop import loop_section
from analysis.load import load_run
from analysis.prices import load_prices
from scenarios.workloads.settings import read_workload
from simgateway.client import request
from tests.gateways.harness import agent_user, rows

pytestmark = pytest.mark.e2e
TTFT_S = 0.3
MIN_CALL_S = TTFT_S - 0.05  # a call's least duration from its logged arrival (the stamp is a bit late)
WORKLOAD = """[tools]
count = 2
result = 20

[loop]
max_steps = 4

[subagents]
at_step = 1
count = 3
max_steps = 2
context = "{context}"
"""


def scripted(simulator, ttft_ms: int):
    """The simulator's model calling a tool at the first step of each conversation, answering the next."""
    return simulator(
        "--ttft-ms", str(ttft_ms), "--itl-ms", "1", "--output-tokens", "4", "--tool-call-steps", "1"
    )


def workload_of(tmp_path: Path, context: str = "spawn"):
    path = tmp_path / "w.toml"
    path.write_text(WORKLOAD.format(context=context))
    return read_workload(SimpleNamespace(workload_file=str(path)))


def one_task(simulator, tmp_path: Path, context: str, ttft_ms: int) -> tuple[list[dict], list[dict], dict]:
    """One task of the workload against a fresh simulator: tasks.csv, requests.csv and the model's log."""
    sim = scripted(simulator, ttft_ms)
    with agent_user(ChatAgent, sim.url, tmp_path / "run", workload=workload_of(tmp_path, context)) as user:
        user.chat_stream()
    calls = {c["id"]: c for c in request(sim.url, "GET", "/v1/sim/calls").json()["calls"]}
    return rows(tmp_path / "run", "tasks.csv"), rows(tmp_path / "run", "requests.csv"), calls


def test_a_planner_step_spawns_3_concurrent_subagents_and_waits_for_the_last(simulator, tmp_path):
    tasks, requests, logged = one_task(simulator, tmp_path, "spawn", round(TTFT_S * 1000))
    (parent,) = [t for t in tasks if not t["parent_task_id"]]
    children = [t for t in tasks if t["parent_task_id"]]
    assert len(children) == 3 and {t["parent_task_id"] for t in children} == {parent["task_id"]}
    assert [(t["steps"], t["end_reason"]) for t in tasks] == [("2", "answer")] * 4, tasks
    assert float(parent["children_wait_ms"]) >= 2 * TTFT_S * 1000, "two steps of each child waited for"
    assert float(parent["tool_ms"]) < 100, "the spawning step's tools are the children, not a tool wait"
    assert len(requests) == 8 and len(logged) == 8, "the parent's 2 calls and 2 of each child's"
    call = {(r["task_id"], r["step"]): logged[r["request_id"]] for r in requests}
    for r in requests:
        assert r["parent_task_id"] == (parent["task_id"] if r["task_id"] != parent["task_id"] else "")
    ids = [t["task_id"] for t in children]
    firsts, lasts = [call[(i, "1")] for i in ids], [call[(i, "2")] for i in ids]
    assert len({c["conversation"] for c in firsts} | {call[(parent["task_id"], "1")]["conversation"]}) == 4
    arrived = [c["ts"] for c in firsts]
    assert max(arrived) - min(arrived) < MIN_CALL_S, "the 3 children's first calls were in flight at once"
    next_step = call[(parent["task_id"], "2")]["ts"]
    assert next_step - max(c["ts"] for c in lasts) >= MIN_CALL_S, "the parent went on after the last child"
    ended = max(float(r["ts"]) + float(r["latency_ms"]) / 1000 for r in requests if r["task_id"] in ids)
    (step_2,) = [r for r in requests if (r["task_id"], r["step"]) == (parent["task_id"], "2")]
    assert float(step_2["ts"]) >= ended, "and by the kit's own clock, after the last child's answer ended"
    section = loop_section(load_run(tmp_path / "run"), load_prices())
    assert section is not None
    table = dict(section.tables)["sub-agents: fan-out, critical path, the parent's wait"]
    assert table.loc["sub-agents per parent (fan-out)", "max"] == 3 and table["n"].iloc[0] == 1


def test_forked_subagents_start_from_the_parents_history(simulator, tmp_path):
    tasks, requests, logged = one_task(simulator, tmp_path, "fork", 5)
    parent = next(t for t in tasks if not t["parent_task_id"])
    step = {(r["task_id"], r["step"]): logged[r["request_id"]] for r in requests}
    planner = step[(parent["task_id"], "1")]
    firsts = [step[(t["task_id"], "1")] for t in tasks if t["parent_task_id"]]
    assert len(firsts) == 3 and {c["conversation"] for c in firsts} == {planner["conversation"]}
    assert all(
        planner["prompt_tokens"] < c["prompt_tokens"] <= planner["prompt_tokens"] + 30 for c in firsts
    ), "the parent's history as the planner sent it, and a brief"
    assert [(t["steps"], t["end_reason"]) for t in tasks] == [("2", "answer")] * 4


def test_a_parent_stopped_while_it_waits_stops_its_children_and_keeps_every_row(simulator, tmp_path):
    sim = scripted(simulator, 1000)
    with agent_user(ChatAgent, sim.url, tmp_path / "run", workload=workload_of(tmp_path)) as user:
        parent = gevent.spawn(user.chat_stream)
        deadline = time.monotonic() + 10
        while request(sim.url, "GET", "/v1/sim/calls").json()["totals"]["calls"] < 4:  # planner + 3 children
            assert time.monotonic() < deadline, "the children's first calls never arrived"
            gevent.sleep(0.05)
        parent.kill()
    tasks = rows(tmp_path / "run", "tasks.csv")
    assert len(tasks) == 4 and {t["status"] for t in tasks} == {"unfinished"}, tasks
    parent_row = next(t for t in tasks if not t["parent_task_id"])
    assert float(parent_row["children_wait_ms"]) > 0
    cut = [r for r in rows(tmp_path / "run", "requests.csv") if r["parent_task_id"]]
    assert [r["error_kind"] for r in cut] == ["interrupted"] * 3, "each child's call in flight is a row"
