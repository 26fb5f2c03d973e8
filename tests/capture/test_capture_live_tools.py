"""`--live-tools` against the simulator, whose scripted model asks a tool call on the first two steps of each
turn and whose call log keeps the tool results every request carried (`tool_results`): with it, the
results the simulator received are its own MCP server's answers (the workload's `[tools] mcp`) to its own
calls, never the recorded ones, and the turn the recording ended gets its calls answered too; without
it, they are the recorded ones, step for step (drawn tools: tests/agents/test_agents_live_tools.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from contract.exit_codes import OK
from contract.schema import SESSION_FORMAT
from simgateway import launch
from simgateway.client import request
from simgateway.mcp_server import text_of
from tests.agents.test_agents_live_tools import RECORDED
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e
MCP_RESULT_BYTES = 64
SIM = ["--ttft-ms", "5", "--itl-ms", "1", "--output-tokens", "4", "--tool-call-steps", "2"]
SIM += ["--mcp-tools", f"lookup:5:{MCP_RESULT_BYTES}"]  # the recorded tool, served by the simulator's MCP
QUERY = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": QUERY}}]
WORKLOAD = '[tools]\nmcp = "/mcp"\n\n[loop]\nmax_steps = 4\n'
RECORDED_RESULTS = [[], ["recorded 1"], ["recorded 2"], []]  # what each recorded step's history ends with


def session_file(tmp_path: Path) -> Path:
    """The unit tests' recorded session (two tool steps, an answer, a second user turn) as a file."""
    path = tmp_path / "recorded.jsonl"
    header = {"format": SESSION_FORMAT, "upstream": "http://127.0.0.1:1"}
    calls = [
        {
            "offset_s": step * 0.1,
            "session": "research",
            "step": step,
            "think_ms": None if step == 0 else 20.0,
            "api": "chat",
            "request": {"messages": messages, "tools": TOOLS, "max_tokens": 8},
            "response": {"status": 200, "latency_ms": 30.0, "usage": {"prompt_tokens": 40}},
        }
        for step, messages in enumerate(RECORDED)
    ]
    path.write_text("".join(json.dumps(v) + "\n" for v in [header, *calls]))
    return path


def replayed(tmp_path: Path, name: str, *extra: str) -> tuple[pd.DataFrame, pd.DataFrame, dict, dict, str]:
    """One agent replaying the session for 2 s: (requests.csv's model calls, tasks.csv, the simulator's
    calls by id, its MCP server's counts, run.json's word for whose tool results were sent)."""
    workload = tmp_path / "w.toml"
    workload.write_text(WORKLOAD)
    run_dir = tmp_path / name
    profile = ("--load-profile", "smoke", "--peak-users", "1", "--duration", "2s", "--identical-copies")
    with launch.running(SIM) as gw:
        replay = ("--sessions", str(session_file(tmp_path)), "--workload", str(workload))
        done = run_locust(run_dir, "--host", gw.url, *replay, *profile, *extra)
        truth = request(gw.url, "GET", "/v1/sim/calls").json()
        mcp = request(gw.url, "GET", "/v1/sim/mcp").json()
    assert done.returncode == OK, done.stderr[-3000:]
    calls = {c["id"]: c for c in truth["calls"]}
    sent = json.loads((run_dir / "run.json").read_text())["workload"]["sessions"]["tools"]
    requests = pd.read_csv(run_dir / "requests.csv")
    model_calls = requests[requests["operation"].str.startswith("chat")]  # MCP's rows are of their own
    return model_calls, pd.read_csv(run_dir / "tasks.csv"), calls, mcp, sent


def copies(requests: pd.DataFrame, tasks: pd.DataFrame, calls: dict) -> list[list[dict]]:
    """Each copy that ran to its end: the simulator's record of its calls, in step order."""
    done = tasks[tasks["status"] == "done"]
    mine = requests[requests["task_id"].isin(done["task_id"])].sort_values(["task_id", "step"])
    return [[calls[r] for r in rows["request_id"]] for _, rows in mine.groupby("task_id")]


def test_live_tools_send_the_gateways_calls_answered_live_and_without_it_the_recorded_results(tmp_path):
    requests, tasks, calls, mcp, sent = replayed(tmp_path, "live", "--live-tools")
    assert sent == "live"
    live = copies(requests, tasks, calls)
    # a 2 s run: 3 or more copies end on a quiet host, 1 did beside CI's other jobs; each one is checked whole
    assert len(live) >= 1, tasks[["status", "end_reason", "steps"]]
    for logged in live:  # 2 steps answered by tool calls, the answer, then the second turn's 2 calls
        assert [c["step"] for c in logged] == [1, 2, 3, 1, 2, 3]
        assert [len(c["tool_calls"]) for c in logged] == [1, 1, 0, 1, 1, 0]
        results = [c["tool_results"] for c in logged]
        assert [len(r) for r in results] == [0, 1, 1, 0, 1, 1], results
        assert all(text == text_of(MCP_RESULT_BYTES) for r in results for text in r), results  # MCP's own
    done = tasks[tasks["status"] == "done"]
    assert (done["steps"] == 6).all() and (done["tool_calls"] == 4).all()
    answered = mcp["tool_calls"]["lookup"]  # by the server: every done copy's calls, a cut copy's perhaps
    assert done["tool_calls"].sum() <= answered <= requests["tool_calls"].sum()
    unrecorded = requests[requests["step"] > len(RECORDED)]  # calls the recording did not have
    assert len(unrecorded) and unrecorded["recorded_latency_ms"].isna().all()

    requests, tasks, calls, mcp, sent = replayed(tmp_path, "recorded")
    assert sent == "recorded"
    as_recorded = copies(requests, tasks, calls)
    assert len(as_recorded) >= 1
    for logged in as_recorded:
        assert [c["tool_results"] for c in logged] == RECORDED_RESULTS
    assert not mcp["tool_calls"]  # no tool ran: the recorded results were sent
