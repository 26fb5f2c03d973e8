"""The real OpenClaw gateway (npm openclaw 2026.9.6 on Node 24, offline) with the simulator's mock LLM as
its model provider, driven by `locust -f locustfile.py --headless --gateway openclaw` as a user runs it.

Truth: the simulator's --ttft-ms (a lower bound on TTFT through the gateway) and --output-tokens; the
gateway's own session list (sessions.list over its RPC) for what the run created and deleted; psutil's
reading of the gateway's process tree for memory. Skipped unless OpenClaw is installed (see
tests/gateways/openclaw_gateway.py).
"""

from __future__ import annotations

import csv
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import httpx
import pandas as pd
import psutil
import pytest

from agents.gateways.openclaw import OpenClawChatAgent, OpenClawResponsesAgent, delete_sessions
from agents.gateways.openclaw_rpc import OpenClawRpc
from analysis import capacity as cap
from analysis import churn as churn_study
from analysis.load import load_run
from analysis.model_calls import INSIDE, model_calls_section, model_side
from contract import exit_codes, schema
from sampler.targets import ProcessTreeTarget
from scenarios.workloads.settings import read_workload
from simgateway import launch
from tests.gateways.harness import agent_user, rows
from tests.gateways.openclaw_gateway import NEEDS_OPENCLAW, TOKEN, TOKEN_ENV, running_openclaw
from tests.locust_runs import REPO, run_locust

pytestmark = [*NEEDS_OPENCLAW, pytest.mark.timeout(1800)]  # start-up and first turns: minutes when busy
TTFT_MS = 200
OUTPUT_TOKENS = 8
CLIENT_TOOL_STEPS = 2
OWN_TOOL_STEPS = 3  # `ls` calls of OpenClaw's own loop per turn, when the prompt says OWN_TOOLS_PROMPT
OWN_TOOLS_PROMPT = "zz-list-the-files"
SCRIPT = f"""[[rule]]
offers = "tool_1"
times = {CLIENT_TOOL_STEPS}

[[rule]]
offers = "ls"
says = "{OWN_TOOLS_PROMPT}"
arguments = {{ path = "." }}
times = {OWN_TOOL_STEPS}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """One gateway for the module (start-up and the first turn cost ~30 s); fresh state, own simulator,
    scripted to call the client tool `tool_1` twice per turn when a request offers it (none but the
    agent-loop test's do), and OpenClaw's own `ls` 3 times per turn of a prompt saying OWN_TOOLS_PROMPT
    (the own-tools test's only)."""
    state = tmp_path_factory.mktemp("openclaw")
    script = state / "tools.toml"
    script.write_text(SCRIPT)
    knobs = ["--ttft-ms", str(TTFT_MS), "--itl-ms", "5", "--output-tokens", str(OUTPUT_TOKENS)]
    with (
        launch.running([*knobs, "--script", str(script)], timeout=60) as model,
        running_openclaw(state, model.url) as gw,
    ):
        yield SimpleNamespace(gateway=gw, model=model)


@pytest.fixture(scope="module")
def openclaw(stack):
    return stack.gateway


def kit_run(openclaw, run_dir: Path, run_id: str, *args: str):
    common = ["--gateway", "openclaw", "--host", openclaw.url, "--api-key-env", TOKEN_ENV]
    common += ["--target-pid", str(openclaw.pid), "--run-id", run_id]
    # sessions.delete takes ~10-20 s on this busy machine: room for every agent's cleanup at stop
    common += ["--stop-timeout", "120"]
    return run_locust(run_dir, *common, *args, timeout=600)


def locust_counts(run_dir: Path) -> Counter:
    with (run_dir / "locust_stats.csv").open(newline="") as handle:
        return Counter({r["Name"]: int(r["Request Count"]) for r in csv.DictReader(handle) if r["Type"]})


def tree_rss_bytes(pid: int) -> int:
    root = psutil.Process(pid)
    return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])


def sessions_of(openclaw, run_id: str) -> list[str]:
    rpc = OpenClawRpc(openclaw.url, TOKEN)
    try:
        listed = rpc.call("sessions.list", {"search": run_id, "limit": 200}).get("sessions") or []
    finally:
        rpc.forget_device()
    return [row["key"] for row in listed]


def chat_turn(url: str, session_key: str) -> None:
    body = {"model": "openclaw", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"Authorization": f"Bearer {TOKEN}", "x-openclaw-session-key": session_key}
    httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=300).raise_for_status()


def assert_rows_equal_locust_counts(run_dir: Path) -> list[dict]:
    """Rows of requests Locust saw; a turn the run's end cut short is a row Locust never counts
    (error kind `interrupted`, agents/base.py), so it is left out of both."""
    requests = [r for r in rows(run_dir, schema.REQUESTS_CSV) if r["error_kind"] != "interrupted"]
    counts = locust_counts(run_dir)
    assert Counter(r["operation"] for r in requests) == counts, (counts, len(requests))
    return requests


def assert_memory_from_the_tree(run_dir: Path, pid: int) -> None:
    """The run sampled the gateway's whole tree, and the sampler's tree reading is psutil's. Both
    readings of the second check are taken at one moment: Node's garbage collector moves the tree by
    hundreds of MiB between the run's last sample and any later reading (1,665 -> 1,320 MiB seen)."""
    samples = [r for r in rows(run_dir, schema.SAMPLES_CSV) if r["target_rss_bytes"]]
    assert len(samples) >= 5, samples
    last = samples[-1]
    assert int(last["target_procs"]) >= 2 and int(last["target_rss_bytes"]) > 200 * schema.MIB, last
    target = ProcessTreeTarget(pid)
    try:
        sampled, now = target.read(with_pss=False), tree_rss_bytes(pid)
    finally:
        target.close()
    assert sampled.procs == len(psutil.Process(pid).children(recursive=True)) + 1, sampled
    assert abs(sampled.rss_bytes - now) <= 0.02 * now, (sampled, now)


def test_chat_and_responses_agents_open_and_delete_sessions_in_churn_cycles(openclaw, tmp_path):
    """The preset's chat and Responses agents (one of each) started and stopped in two cycles (the stages
    profile): each opens its own session with its first turn and deletes it when stopped, so every cycle's
    sessions are new and gone after. One run for both: the turns' truth (TTFT, tokens, session keys) and
    the churn's (an OpenClaw run costs minutes here)."""
    run_dir, run_id = tmp_path / "run", "ocl-churn-run"
    # the idle gap outlasts the stopping agents (in-flight turn, then ~20 s of sessions.delete): Locust
    # spawns nobody for a stage whose users it still counts as running
    stages = "1s:2,30s:2,1s:0,90s:0,1s:2,30s:2,1s:0"
    result = kit_run(openclaw, run_dir, run_id, "--stages", stages)
    assert result.returncode == 0, result.stderr[-3000:]
    requests = assert_rows_equal_locust_counts(run_dir)
    turns = [r for r in requests if r["operation"] in ("chat.stream", "responses.stream")]
    assert {r["operation"] for r in turns} == {"chat.stream", "responses.stream"}, turns
    assert all(r["ok"] == "1" for r in turns), turns
    assert all(float(r["ttft_ms"]) >= TTFT_MS for r in turns), turns
    assert all(r["tokens_out"] == str(OUTPUT_TOKENS) for r in turns), turns
    assert all(r["session_id"].startswith(f"{run_id}-") for r in turns), turns
    closes = [r for r in requests if r["operation"] == "session.close"]
    assert len(closes) == 4 and all(r["ok"] == "1" for r in closes), closes
    agents = rows(run_dir, schema.AGENTS_CSV)
    assert Counter(r["event"] for r in agents) == {"created": 4, "closed": 4}, agents
    created = {r["session_id"] for r in agents if r["event"] == "created"}
    closed = {r["session_id"] for r in agents if r["event"] == "closed" and not r["error"]}
    assert len(created) == 4 and created == closed, agents
    assert sessions_of(openclaw, run_id) == []  # cleanup deleted what the run opened
    assert_memory_from_the_tree(run_dir, openclaw.pid)


def test_cleanup_deletes_only_the_exact_key(openclaw):
    """A session whose key merely starts with ours (agent 1 vs agent 10) is never touched."""
    for key in ("ocl-exact-1", "ocl-exact-10"):
        chat_turn(openclaw.url, key)
    assert delete_sessions(openclaw.url, TOKEN, "ocl-exact-1") == ["agent:main:ocl-exact-1"]
    assert delete_sessions(openclaw.url, TOKEN, "ocl-exact-1") == []
    assert sessions_of(openclaw, "ocl-exact-") == ["agent:main:ocl-exact-10"]


# ---- capacity, churn and kit.cleanup through the preset's session client (sessions.delete over the RPC) --
# deletes took 7-23 s each here: tiny runs, a request timeout that outlasts one
SERIAL = ["--request-timeout", "120", "--memory-budget", "8GiB"]  # the idle gateway alone is ~1 GiB


def serial_run(openclaw, run_dir: Path, run_id: str, *args: str) -> pd.DataFrame:
    """A capacity or churn run that must end OK; its agents.csv events, each session keyed by the run."""
    done = kit_run(openclaw, run_dir, run_id, *SERIAL, *args)
    assert done.returncode == exit_codes.OK, done.stderr[-3000:]
    agents = pd.read_csv(run_dir / schema.AGENTS_CSV)
    assert agents["session_id"].str.startswith(f"loadkit-{run_id}-").all(), agents
    return agents


def test_capacity_and_churn_close_their_sessions_over_the_rpc(openclaw, tmp_path):
    agents = serial_run(
        openclaw, tmp_path / "cap", "oc-cap", "--load-profile", "capacity", "--max-agents", "5"
    )
    result = cap.capacity_result(pd.read_csv(tmp_path / "cap" / schema.CAPACITY_CSV))
    assert result.stop_reason == schema.STOP_CAP and result.agents_ready == 5, result.notes
    assert result.fit is not None  # the figure with its R² goes to docs/capacity.md
    print(
        f"openclaw: {result.marginal_mib:.2f} MiB/agent, R² {result.r2:.3f}, first {result.first_agent_mib}"
    )
    events = agents["event"].value_counts()
    assert events["created"] == events["closed"] == 5 and "close_failed" not in events, events
    assert sessions_of(openclaw, "oc-cap") == []  # the server's own list: every session deleted

    churn = ["--load-profile", "churn", "--churn-cycles", "2", "--churn-batch", "2"]
    agents = serial_run(openclaw, tmp_path / "churn", "oc-churn", *churn)
    result = churn_study.churn_result(pd.read_csv(tmp_path / "churn" / schema.CAPACITY_CSV))
    assert result.sessions_closed == 4
    prompts = pd.read_csv(tmp_path / "churn" / schema.REQUESTS_CSV).query("operation == 'session.prompt'")
    assert len(prompts) == 4 and prompts["ok"].all(), prompts  # a second turn on each session's key
    assert sessions_of(openclaw, "oc-churn") == []


def test_cleanup_closes_what_a_run_kept_open(openclaw, tmp_path):
    run = tmp_path / "kept"
    serial_run(openclaw, run, "oc-kept", "--load-profile", "capacity", "--max-agents", "2", "--no-cleanup")
    assert sorted(sessions_of(openclaw, "oc-kept")) == [
        "agent:main:loadkit-oc-kept-1",
        "agent:main:loadkit-oc-kept-2",
    ]
    command = [
        sys.executable,
        "-m",
        "kit.cleanup",
        str(run),
        "--api-key-env",
        TOKEN_ENV,
        "--request-timeout",
        "120",
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == exit_codes.OK, done.stderr
    assert "2 session(s) closed, 0 could not" in done.stdout
    assert sessions_of(openclaw, "oc-kept") == []


# ---- run ids as OpenClaw stores them (it lower-cases session keys) --------------------------------------
def test_an_upper_case_run_id_is_refused_before_any_session_is_opened(openclaw, tmp_path):
    """A key built from `OCL-Upper` is stored as `ocl-upper-...`: the kit would never find its own
    sessions to delete. Refused as bad input, before any turn."""
    result = kit_run(openclaw, tmp_path / "run", "OCL-Upper", "-u", "1", "-r", "1", "-t", "15s")
    assert result.returncode == exit_codes.BAD_INPUT, result.stderr[-3000:]
    assert "lower-case" in result.stderr and not (tmp_path / "run").exists()
    assert sessions_of(openclaw, "ocl-upper") == []


def test_a_session_keyed_in_upper_case_is_found_and_deleted(openclaw):
    """What an older run (or a hand-made key) left: matched the way the gateway stores it."""
    chat_turn(openclaw.url, "OCL-Case-1")
    assert sessions_of(openclaw, "ocl-case-") == ["agent:main:ocl-case-1"]
    assert delete_sessions(openclaw.url, TOKEN, "OCL-Case-1") == ["agent:main:ocl-case-1"]
    assert sessions_of(openclaw, "ocl-case-") == []


@pytest.mark.parametrize("agent", [OpenClawChatAgent, OpenClawResponsesAgent])
def test_the_agent_loop_runs_through_openclaw_with_client_tools(openclaw, tmp_path, agent):
    """The kit's tools reach the model through OpenClaw and its tool calls come back to the kit, which runs
    them and sends the results: the scripted 2 tool steps, then the answer, in one OpenClaw session."""
    path = tmp_path / "w.toml"
    path.write_text("[tools]\ncount = 2\nresult = 40\n\n[loop]\nmax_steps = 6\n")
    options = {"api_key_env": TOKEN_ENV, "model": "openclaw", "responses_stream": True}
    options |= {"workload": read_workload(SimpleNamespace(workload_file=str(path))), "request_timeout": 600.0}
    with agent_user(agent, openclaw.url, tmp_path / "run", **options) as user:
        (user.respond if agent is OpenClawResponsesAgent else user.chat_stream)()
    (task,) = rows(tmp_path / "run", schema.TASKS_CSV)
    assert (task["end_reason"], task["steps"], task["tool_calls"]) == ("answer", "3", "2"), task
    steps = [r for r in rows(tmp_path / "run", schema.REQUESTS_CSV) if r["step"]]
    assert [r["first_token_kind"] for r in steps] == ["tool_call", "tool_call", "content"], steps
    assert len({r["session_id"] for r in steps}) == 1
    tokens = [int(r["tokens_in"]) for r in steps]
    assert tokens == sorted(set(tokens)), "each step's prompt carries the one before and what was appended"


def test_openclaw_own_tool_runs_are_seen_at_the_model_only(stack, tmp_path):
    """OpenClaw streams nothing of the tools its own loop runs (chat: role, text deltas, usage; Responses:
    the answer's message item; function_call items only for client tools): each turn's row says 0 tool
    calls. The model's side shows the loop: the scripted 3 `ls` calls and the answer, 4 model calls joined
    to each turn, and the report's tool calls per kit request read 3 at the model beside 0 in requests.csv."""
    run_dir = tmp_path / "run"
    model = ["--model-calls-url", stack.model.url, "--prompt", OWN_TOOLS_PROMPT]
    result = kit_run(stack.gateway, run_dir, "ocl-own-tools", *model, "-u", "2", "-r", "2", "-t", "40s")
    assert result.returncode == 0, result.stderr[-3000:]
    run = load_run(run_dir)
    turns = run.requests[run.requests["operation"].isin(["chat.stream", "responses.stream"])]
    done = turns[turns["ok"] == 1]
    assert len(done) >= 2 and set(done["operation"]) == {"chat.stream", "responses.stream"}, turns
    assert (done["tool_calls"] == 0).all(), done  # what OpenClaw's stream says of its loop: nothing
    side = model_side(run)
    assert side is not None and side.missed == 0
    joined = side.joined[side.joined["request_id"].isin(done["request_id"])]  # a turn cut at stop aside
    assert (joined["made_by"] == INSIDE).all(), joined
    per_turn = joined.groupby("request_id").agg(calls=("step", "size"), tools=("tool_calls", "sum"))
    assert len(per_turn) == len(done), (per_turn, done["request_id"])
    assert (per_turn["calls"] == OWN_TOOL_STEPS + 1).all() and (per_turn["tools"] == OWN_TOOL_STEPS).all()
    section = model_calls_section(run)
    assert section is not None
    beside = dict(section.tables)["the model's count beside the kit's"]
    row = beside.loc["tool calls asked per kit request that made any"]
    assert (row["at the model"], row["in requests.csv"]) == (OWN_TOOL_STEPS, 0), beside
