"""An agent whose tools are on an MCP server (the `openai` package for its model, the official `mcp` SDK's
Streamable HTTP client for its tools) recorded through the recorder, against the simulator's model and
MCP endpoint: every tools/call it made is a line of the session it was asked in, between the model calls,
with its arguments and what the server answered (the simulator's own counts); then that file replayed by
N copies, the simulator's own tools/call counts N copies times the recorded calls, each copy's rows in
the recorded order."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pandas as pd
import pytest

from contract.exit_codes import OK
from simgateway import launch
from simgateway.client import request
from tests.capture.openai_agent import API_KEY
from tests.capture.test_capture_recorder import ENV, lines_of, recording
from tests.locust_runs import run_locust
from tests.paths import REPO

pytestmark = pytest.mark.e2e
AGENT = REPO / "tests" / "capture" / "mcp_agent.py"
TOOL_STEPS = 2  # the model asks one tool call on each of a task's first 2 steps, then answers in text
TASKS = 2
PROGRESS = 2  # progress notifications the server sends on each call's SSE stream
TOOL_MS = 30.0
SIM = [
    *("--ttft-ms", "20", "--itl-ms", "1", "--output-tokens", "8", "--tool-call-steps", str(TOOL_STEPS)),
    *("--mcp-tool-ms", str(TOOL_MS), "--mcp-progress", str(PROGRESS)),
]
ROUNDS, AGENTS = 2, 2  # rounds of 2 tasks: each task a copy of one recorded session


def test_an_mcp_agent_is_recorded_tool_call_for_tool_call_and_replayed_by_copies(tmp_path):
    out = tmp_path / "mcp.jsonl"
    with launch.running(SIM) as gw:
        with recording(gw.url, out) as (base, proc):
            argv = [sys.executable, str(AGENT), base, str(TASKS)]
            done = subprocess.run(argv, env=ENV, capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr[-3000:]
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=20) == 0
            said = proc.stdout.read() if proc.stdout else ""
        recorded_truth = request(gw.url, "GET", "/v1/sim/mcp").json()
        recorded_calls = request(gw.url, "GET", "/v1/sim/calls").json()["totals"]["calls"]
        run_dir = tmp_path / "replay"
        rounds = ",".join([str(AGENTS)] * ROUNDS)
        profile = ("--load-profile", "rounds", "--rounds", rounds, "--baseline", "0s")
        replayed = run_locust(run_dir, "--host", gw.url, "--sessions", str(out), *profile)
        truth = request(gw.url, "GET", "/v1/sim/mcp").json()
        model_calls = request(gw.url, "GET", "/v1/sim/calls").json()["totals"]["calls"] - recorded_calls
    made = json.loads(done.stdout)["tool_calls"]
    header, *lines = lines_of(out)
    tool_lines = [line for line in lines if line["api"] == "mcp"]
    assert len(made) == TASKS * TOOL_STEPS == recorded_truth["tool_calls"]["lookup"] == len(tool_lines)
    assert f"{len(lines)} calls ({len(tool_lines)} MCP tool calls) in {TASKS} sessions written" in said
    assert [line["request"]["params"] for line in tool_lines] == [
        {"name": m["name"], "arguments": m["arguments"]} for m in made
    ]  # every call, with the arguments the agent sent, in order
    for line in tool_lines:
        answer = line["response"]
        assert answer["status"] == 200 and answer["isError"] is False
        assert answer["content_chars"] == made[0]["chars"] and answer["notifications"] == PROGRESS
        assert made[0]["progress"] == PROGRESS  # what the agent saw, passed through
        assert TOOL_MS <= answer["latency_ms"] < TOOL_MS + 500
    for session in {line["session"] for line in lines}:
        apis = [line["api"] for line in lines if line["session"] == session]
        assert apis == ["chat", "mcp"] * TOOL_STEPS + ["chat"]  # each tool call between its model calls
    text = out.read_text()
    assert (
        API_KEY not in text and "mcp-session-id" not in text.lower() and "authorization" not in text.lower()
    )

    assert replayed.returncode == OK, replayed.stderr[-3000:]
    copies = AGENTS * ROUNDS
    served = truth["tool_calls"]["lookup"] - recorded_truth["tool_calls"]["lookup"]
    assert served == copies * len(tool_lines) // TASKS  # each copy replays one recorded session
    assert model_calls == copies * (len(lines) - len(tool_lines)) // TASKS
    requests = pd.read_csv(run_dir / "requests.csv")
    tasks = pd.read_csv(run_dir / "tasks.csv")
    assert len(tasks) == copies and (tasks["status"] == "done").all(), tasks[["status", "error"]]
    calls = requests[requests["operation"] == "mcp.tools_call"]
    assert len(calls) == served and calls["ok"].all() and (calls["tool_name"] == "lookup").all()
    opened = truth["sessions"]["opened"] - recorded_truth["sessions"]["opened"]
    closed = truth["sessions"]["closed"] - recorded_truth["sessions"]["closed"]
    assert opened == closed == copies  # a session a copy, closed at its end
    for _, rows in requests[requests["task_id"].notna()].sort_values("ts").groupby("task_id"):
        # the agent's calls were not streamed: replayed so (chat, not chat.stream), as recorded
        assert list(rows["operation"]) == ["chat", "mcp.tools_call"] * TOOL_STEPS + ["chat"]
        assert list(rows["step"].fillna(0).astype(int)) == [1, 1, 2, 2, 3]
