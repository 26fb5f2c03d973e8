"""Hermes Agent 0.19 running its own agent loop on the simulator's scripted model: a chat turn through the
gateway takes the scripted number of model calls (the simulator's own count), and Hermes Kanban workers
finish their tasks through the scripted `kanban_complete` (examples/sim-scripts/hermes-kanban.toml).

Truth: GET /v1/sim/calls (model calls and tool calls per conversation, each call's prompt tokens).
Skipped unless a `hermes` executable is found (LOADKIT_HERMES_BIN, or on PATH).
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from agents.gateways.hermes_kanban import HermesKanbanAgent
from agents.gateways.hermes_runs import HermesRunsAgent
from agents.gateways.kanban_cli import KanbanCli
from agents.gateways.openai_chat import ChatAgent
from agents.gateways.responses import ResponsesAgent
from analysis.load import load_run
from analysis.model_calls import INSIDE, NONE, model_calls_section, model_side
from contract import schema
from contract.derived import TPOT_MS, derived_value
from kit.model_calls import ModelCalls
from scenarios.workloads.settings import read_workload
from simgateway.client import request
from tests.gateways.harness import HERMES, NEEDS_HERMES, RUN_ID, agent_user, hermes_gateway, rows
from tests.locust_runs import run_locust, wait_for
from tests.paths import REPO

pytestmark = [*NEEDS_HERMES, pytest.mark.e2e]
KANBAN_SCRIPT = REPO / "examples" / "sim-scripts" / "hermes-kanban.toml"
STEPS = 3  # tool-call steps the model takes before it answers
TURNS = 2

TODO_TOOLSET = "toolsets: [todo]\n"  # Hermes offers its `todo` tool, which the scripted model calls


def todo_model(simulator, itl_ms: int = 1, output_tokens: int = 5):
    """The simulator as Hermes' model: it calls `todo` for STEPS steps of each turn, then answers."""
    knobs = ["--ttft-ms", "20", "--itl-ms", str(itl_ms), "--output-tokens", str(output_tokens)]
    return simulator(*knobs, "--tool-names", "todo", "--tool-call-steps", str(STEPS))


def conversations(sim_url: str, containing: str) -> list[dict]:
    doc = request(sim_url, "GET", "/v1/sim/calls").json()
    return [c for c in doc["conversations"] if containing in c["first_user"]]


def test_a_chat_turn_through_hermes_takes_the_scripted_number_of_model_calls(
    simulator, tmp_path, monkeypatch
):
    """Hermes offers its tools; the model calls `todo` for 3 steps, then answers: 4 model calls per turn,
    every turn of a sticky session (steps count from the last text answer). Hermes sums its loop's
    usage into the reply, so the kit's tokens_in is the sum of the 4 calls' prompts."""
    sim = todo_model(simulator)
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "session_header": "X-Hermes-Session-Id"}
    with hermes_gateway(sim.url, tmp_path / "home", monkeypatch, TODO_TOOLSET) as (url, _pid):
        with agent_user(ChatAgent, url, tmp_path / "run", model="hermes-agent", **options) as user:
            for _ in range(TURNS):
                user.chat_stream()
            marker = f"[agent {user.agent_id} run"
    requests = rows(tmp_path / "run", schema.REQUESTS_CSV)
    assert [r["ok"] for r in requests] == ["1"] * TURNS, requests
    assert [r["tool_calls"] for r in requests] == [str(STEPS)] * TURNS  # from Hermes' own progress events
    (conversation,) = conversations(sim.url, marker)
    assert conversation["calls"] == TURNS * (STEPS + 1) and conversation["tool_calls"] == TURNS * STEPS
    calls = request(sim.url, "GET", "/v1/sim/calls").json()["calls"]
    mine = [c for c in calls if c["conversation"] == conversation["key"]]
    assert [c["step"] for c in mine] == [1, 2, 3, 4] * TURNS
    assert all(t["name"] == "todo" for c in mine for t in c["tool_calls"])
    first_turn = sum(c["prompt_tokens"] for c in mine[: STEPS + 1])
    assert int(requests[0]["tokens_in"]) == first_turn, (requests[0], [c["prompt_tokens"] for c in mine])


def test_a_hermes_run_counts_the_tool_calls_hermes_reports_of_its_own_loop(simulator, tmp_path, monkeypatch):
    """/v1/runs streams `tool.started` for each tool Hermes runs: the run's row counts them (the scripted
    model calls `todo` 3 times), where the client saw no tool-call delta at all."""
    sim = todo_model(simulator)
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "runs_follow": "events", "task_timeout": 60.0}
    with hermes_gateway(sim.url, tmp_path / "home", monkeypatch, TODO_TOOLSET) as (url, _pid):
        with agent_user(HermesRunsAgent, url, tmp_path / "run", model="hermes-agent", **options) as user:
            user.run_and_follow()
    (task,) = rows(tmp_path / "run", schema.TASKS_CSV)
    assert task["status"] == "done" and task["tool_calls"] == str(STEPS), task
    (stream,) = [r for r in rows(tmp_path / "run", schema.REQUESTS_CSV) if r["operation"] == "run.events"]
    assert stream["tool_calls"] == str(STEPS), stream


@pytest.mark.parametrize("stream", [True, False])
def test_a_hermes_response_counts_the_tools_hermes_ran_and_leaves_the_client_none(
    simulator, tmp_path, monkeypatch, stream
):
    """/v1/responses sends a `function_call` item and its `function_call_output` for each tool Hermes runs
    (the scripted model calls `todo` 3 times): each response's row counts 3 tool calls, and an agent loop
    of the kit's own (offering its tools) has none left to run: its task ends in one step, an answer,
    with those 3 calls. Streamed, TTFT is timed to the answer's text, not to a tool item."""
    sim = todo_model(simulator)
    workload = tmp_path / "tools.toml"
    workload.write_text("[tools]\ncount = 2\nschema_tokens = 50\nresult = 10\n\n[loop]\nmax_steps = 5\n")
    settings = read_workload(SimpleNamespace(workload_file=str(workload)))
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "responses_stream": stream, "workload": settings}
    with hermes_gateway(sim.url, tmp_path / "home", monkeypatch, TODO_TOOLSET) as (url, _pid):
        with agent_user(ResponsesAgent, url, tmp_path / "run", model="hermes-agent", **options) as user:
            for _ in range(TURNS):
                user.respond()
            marker = f"[agent {user.agent_id} run"
    requests = rows(tmp_path / "run", schema.REQUESTS_CSV)
    assert [r["ok"] for r in requests] == ["1"] * TURNS, requests
    assert [r["tool_calls"] for r in requests] == [str(STEPS)] * TURNS
    assert [r["first_token_kind"] for r in requests] == [("content" if stream else "")] * TURNS
    tasks = rows(tmp_path / "run", schema.TASKS_CSV)
    assert [(t["end_reason"], t["steps"], t["tool_calls"]) for t in tasks] == [("answer", "1", "3")] * TURNS
    (conversation,) = conversations(sim.url, marker)  # the truth: the calls Hermes made on the model
    assert conversation["tool_calls"] == TURNS * STEPS, conversation


def test_the_model_side_of_a_hermes_run_joins_each_turns_4_model_calls_to_it(
    simulator, tmp_path, monkeypatch
):
    """A kit run against Hermes with the simulator as its model and --model-calls-url: each answered turn
    is the kit's request inside which Hermes made its 4 model calls (3 `todo` steps and the answer)."""
    sim = todo_model(simulator)
    run_dir = tmp_path / "run"
    with hermes_gateway(sim.url, tmp_path / "home", monkeypatch, TODO_TOOLSET) as (url, pid):
        args = [
            "ChatAgent",
            "--gateway",
            "hermes",
            "--host",
            url,
            "--target-pid",
            str(pid),
            "--model-calls-url",
        ]
        profile = [
            "--load-profile",
            "smoke",
            "--peak-users",
            "2",
            "--duration",
            "6s",
            "--model",
            "hermes-agent",
        ]
        done = run_locust(run_dir, *args, sim.url, *profile, "--think-time", "0")
    assert done.returncode == 0, done.stderr[-2000:]
    side = model_side(load_run(run_dir))
    assert side is not None
    answered = side.joined[side.joined["made_by"] == INSIDE].groupby("request_id").size()
    assert len(answered) >= 2 and (answered == STEPS + 1).all(), answered


@pytest.mark.timing  # Hermes relays each token in Python: beside other tests it read 24.5 ms once
def test_tpot_through_hermes_reads_the_models_itl_not_the_loops_summed_usage(
    simulator, tmp_path, monkeypatch
):
    """Hermes streams the answer's 16 tokens 20 ms apart but reports the usage of its 4 model calls, the
    tool-call tokens the client never received among them (85 output tokens; TPOT divided by them read
    3.7 ms): TPOT on the content received reads the model's 20 ms within 10 %."""
    sim = todo_model(simulator, itl_ms=20, output_tokens=16)
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "session_header": "X-Hermes-Session-Id"}
    with hermes_gateway(sim.url, tmp_path / "home", monkeypatch, TODO_TOOLSET) as (url, _pid):
        with agent_user(ChatAgent, url, tmp_path / "run", model="hermes-agent", **options) as user:
            for _ in range(TURNS):
                user.chat_stream()
    requests = rows(tmp_path / "run", schema.REQUESTS_CSV)
    assert [r["ok"] for r in requests] == ["1"] * TURNS, requests
    for row in requests:
        tpot = derived_value(TPOT_MS, row)
        assert int(row["tokens_out"]) > int(row["content_tokens"]) > 1, row  # usage counts more than arrived
        # 10 % (2 ms): fixed, the bug it catches read 3.7 ms, 5x off
        assert tpot is not None and abs(tpot - 20.0) <= 2.0, (tpot, row)


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


# Hermes reviews a session's memory after `nudge_interval` user turns (its default 10), in the background,
# through the same model; set here so the truth is in the test's own config
MEMORY_REVIEW = "toolsets: [memory]\nmemory:\n  memory_enabled: true\n  nudge_interval: 10\n"
STICKY_TURNS = 12  # one review (after turn 10), none yet due at turn 20


def test_hermes_memory_review_after_10_sticky_turns_is_a_model_call_no_task_made(
    simulator, tmp_path, monkeypatch
):
    """12 turns of one sticky session, each one model call (the model answers in text); after the 10th
    Hermes runs its memory review on the session's history, beside turn 11. model_calls.csv has 13 calls:
    12 inside the kit's turns, one each, and the review, which no request made (its turn opens with
    Hermes' own prompt). The bill at the model is the kit's tokens plus exactly the review's."""
    sim = simulator("--ttft-ms", "20", "--itl-ms", "1", "--output-tokens", "5", "--price-in-per-m", "1")
    run_dir = tmp_path / "run"
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "session_header": "X-Hermes-Session-Id"}
    with hermes_gateway(sim.url, tmp_path / "home", monkeypatch, MEMORY_REVIEW) as (url, _pid):
        with agent_user(ChatAgent, url, run_dir, model="hermes-agent", **options) as user:
            reader = ModelCalls(sim.url, run_dir, RUN_ID, {})
            reader.start()
            for _ in range(STICKY_TURNS):
                user.chat_stream()
            wait_for(lambda: answered_calls(sim.url) > STICKY_TURNS, 120, "Hermes' memory review")
        reader.close()
    assert reader.record["calls"] == STICKY_TURNS + 1 and reader.record["missed"] == 0, reader.record
    run = load_run(run_dir)
    assert list(run.requests["ok"]) == [1] * STICKY_TURNS, run.requests
    side = model_side(run)
    assert side is not None
    joined = side.joined
    assert joined["made_by"].value_counts().to_dict() == {INSIDE: STICKY_TURNS, NONE: 1}, joined
    assert (joined[joined["made_by"] == INSIDE].groupby("request_id").size() == 1).all()
    (review,) = joined[joined["made_by"] == NONE].itertuples()
    assert review.tokens_in > int(run.requests["tokens_in"].max()) and review.cost_usd > 0  # the history
    at_model, in_rows = joined["tokens_in"].sum(), run.requests["tokens_in"].sum()
    assert at_model - in_rows == review.tokens_in, (at_model, in_rows)  # the difference, named
    section = model_calls_section(run)
    assert section is not None
    by_maker = dict(section.tables)["who made the calls the model answered"]
    assert by_maker.loc[NONE, "calls"] == 1 and by_maker.loc[NONE, "input tokens"] == review.tokens_in


def answered_calls(sim_url: str) -> int:
    return int(request(sim_url, "GET", "/v1/sim/calls").json()["totals"]["calls"])
