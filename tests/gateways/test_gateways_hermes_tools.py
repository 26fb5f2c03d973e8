"""Hermes Agent 0.19 running its own agent loop on the simulator's scripted model: a chat turn through the
gateway takes the scripted number of model calls (the simulator's own count), and Hermes Kanban workers
finish their tasks through the scripted `kanban_complete` (examples/sim-scripts/hermes-kanban.toml).

Truth: GET /v1/sim/calls (model calls and tool calls per conversation, each call's prompt tokens).
Skipped unless a `hermes` executable is found (LOADKIT_HERMES_BIN, or on PATH).
"""

from __future__ import annotations

import json

import pytest

from agents.hermes_kanban import HermesKanbanAgent
from agents.kanban_cli import KanbanCli
from agents.openai_chat import ChatAgent
from contract import schema
from simgateway.client import request
from tests.gateways.harness import HERMES, NEEDS_HERMES, agent_user, hermes_gateway, rows
from tests.paths import REPO

pytestmark = [*NEEDS_HERMES, pytest.mark.e2e]
KANBAN_SCRIPT = REPO / "examples" / "sim-scripts" / "hermes-kanban.toml"
STEPS = 3  # tool-call steps the model takes before it answers
TURNS = 2


def conversations(sim_url: str, containing: str) -> list[dict]:
    doc = request(sim_url, "GET", "/v1/sim/calls").json()
    return [c for c in doc["conversations"] if containing in c["first_user"]]


def test_a_chat_turn_through_hermes_takes_the_scripted_number_of_model_calls(
    simulator, tmp_path, monkeypatch
):
    """Hermes offers its tools; the model calls `todo` for 3 steps, then answers: 4 model calls per turn,
    every turn of a sticky session (steps count from the last text answer). Hermes sums its loop's
    usage into the reply, so the kit's tokens_in is the sum of the 4 calls' prompts."""
    knobs = ["--ttft-ms", "20", "--itl-ms", "1", "--output-tokens", "5", "--tool-names", "todo"]
    sim = simulator(*knobs, "--tool-call-steps", str(STEPS))
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "session_header": "X-Hermes-Session-Id"}
    with hermes_gateway(sim.url, tmp_path / "home", monkeypatch, "toolsets: [todo]\n") as (url, _pid):
        with agent_user(ChatAgent, url, tmp_path / "run", model="hermes-agent", **options) as user:
            for _ in range(TURNS):
                user.chat_stream()
            marker = f"[agent {user.agent_id} run"
    requests = rows(tmp_path / "run", schema.REQUESTS_CSV)
    assert [r["ok"] for r in requests] == ["1"] * TURNS, requests
    (conversation,) = conversations(sim.url, marker)
    assert conversation["calls"] == TURNS * (STEPS + 1) and conversation["tool_calls"] == TURNS * STEPS
    calls = request(sim.url, "GET", "/v1/sim/calls").json()["calls"]
    mine = [c for c in calls if c["conversation"] == conversation["key"]]
    assert [c["step"] for c in mine] == [1, 2, 3, 4] * TURNS
    assert all(t["name"] == "todo" for c in mine for t in c["tool_calls"])
    first_turn = sum(c["prompt_tokens"] for c in mine[: STEPS + 1])
    assert int(requests[0]["tokens_in"]) == first_turn, (requests[0], [c["prompt_tokens"] for c in mine])


def test_kanban_workers_finish_through_the_scripted_kanban_complete(simulator, tmp_path, monkeypatch):
    sim = simulator(
        "--ttft-ms", "20", "--itl-ms", "1", "--output-tokens", "5", "--script", str(KANBAN_SCRIPT)
    )
    settings = "toolsets: []\nkanban:\n  dispatch_interval_seconds: 1\n"
    home = tmp_path / "home"
    with hermes_gateway(sim.url, home, monkeypatch, settings):
        options = {"hermes_command": HERMES, "poll_interval": 0.5, "task_timeout": 120.0}
        with agent_user(HermesKanbanAgent, "", tmp_path / "run", cleanup=False, **options) as user:
            tasks = [user.submit() for _ in range(2)]
            for task in tasks:
                assert task is not None
                user.follow(task)
        shown = {t.task_id: KanbanCli.of(HERMES).json_object("show", t.task_id) for t in tasks if t}
    rows_by_id = {r["task_id"]: r for r in rows(tmp_path / "run", schema.TASKS_CSV)}
    assert {rows_by_id[i]["status"] for i in shown} == {"done"}, rows_by_id
    for task_id, doc in shown.items():
        assert doc["latest_summary"] == "Completed by the simulator's script.", json.dumps(doc)[:500]
        (conversation,) = conversations(sim.url, f"work kanban task {task_id}")
        assert conversation["calls"] == 2 and conversation["tool_calls"] == 1, conversation
    sent = [t for c in request(sim.url, "GET", "/v1/sim/calls").json()["calls"] for t in c["tool_calls"]]
    assert sorted(json.loads(t["arguments"])["task_id"] for t in sent) == sorted(shown)
    assert {t["name"] for t in sent} == {"kanban_complete"}
