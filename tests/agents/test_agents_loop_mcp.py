"""The agent loop with its tools on an MCP server (`[tools] mcp = "/mcp"`, or a URL on another loopback
origin: an MCP gateway beside the model's), against the simulator: its
scripted model calls a tool for 3 steps, so each task has 4 model rows and 3 `mcp.tools_call` rows with
the task's id and step; the model is offered the server's tools/list; each tool result (its size a
knob) is appended to the next step's context, which the model's own log reads back; tool time is real.
"""

from __future__ import annotations

import httpx
import pandas as pd
import pytest

from contract.exit_codes import OK
from contract.schema import ERROR_INTERRUPTED, REQUEST, TASK
from simgateway.client import request
from tests.locust_runs import run_locust, wait_for

pytestmark = pytest.mark.e2e

MODEL = ["--ttft-ms", "5", "--itl-ms", "1", "--output-tokens", "4", "--tool-call-steps", "3"]
RESULT_BYTES = 2000  # 500 tokens at the simulator's 4 characters a token
TOOL_MS = 30
TOOLS = ["--mcp-preload", "--mcp-tools", "search,fetch,lookup", "--mcp-tool-ms", str(TOOL_MS)]
WORKLOAD = """[tools]
mcp = "{url}"

[loop]
max_steps = 10
"""


@pytest.mark.parametrize("url", ["/mcp", "/sse"])  # Streamable HTTP; HTTP+SSE, the POST's 405 its cue
def test_each_task_calls_three_mcp_tools_whose_results_grow_the_next_steps_context(simulator, tmp_path, url):
    sim = simulator(*MODEL, *TOOLS, "--mcp-result-bytes", str(RESULT_BYTES))
    workload = tmp_path / "w.toml"
    workload.write_text(WORKLOAD.format(url=url))
    run_dir = tmp_path / "run"
    smoke = ("--load-profile", "smoke", "--peak-users", "3", "--duration", "4s", "--think-time", "0")
    done = run_locust(run_dir, "ChatAgent", "--host", sim.url, *smoke, "--workload", str(workload))
    assert done.returncode == OK, done.stderr[-2000:]
    tasks = pd.read_csv(run_dir / "tasks.csv")
    finished = tasks[tasks[TASK.status] != "unfinished"]
    assert len(finished) >= 5 and (finished[TASK.end_reason] == "answer").all()
    assert (finished[TASK.tool_calls] == 3).all() and (finished[TASK.tool_ms] >= 3 * TOOL_MS).all()
    requests = pd.read_csv(run_dir / "requests.csv")
    truth = {c["id"]: c for c in request(sim.url, "GET", "/v1/sim/calls").json()["calls"]}
    for task_id in finished[TASK.task_id]:
        mine = requests[requests[REQUEST.task_id] == task_id]
        model = mine[mine[REQUEST.operation] == "chat.stream"].sort_values(REQUEST.step)
        tools = mine[mine[REQUEST.operation] == "mcp.tools_call"].sort_values(REQUEST.step)
        assert list(model[REQUEST.step]) == [1, 2, 3, 4] and list(tools[REQUEST.step]) == [1, 2, 3]
        assert tools[REQUEST.ok].all() and set(tools[REQUEST.tool_name]) == {"search", "fetch", "lookup"}
        logged = [truth[r] for r in model[REQUEST.request_id]]
        assert all(c["tools_offered"] == ["search", "fetch", "lookup"] for c in logged)
        for before, after in zip(logged, logged[1:], strict=False):
            (call,) = before["tool_calls"]
            appended = (len(call["name"]) + len(call["arguments"]) + RESULT_BYTES) / 4
            assert abs(after["prompt_tokens"] - before["prompt_tokens"] - appended) <= 2, (before, after)
    wait_for(lambda: mcp_stats(sim.url)["sessions"]["open"] == 0, 2.0, "every MCP session closed")
    server = mcp_stats(sim.url)
    all_calls = requests[requests[REQUEST.operation] == "mcp.tools_call"]
    cut = all_calls[all_calls[REQUEST.error_kind] == ERROR_INTERRUPTED]  # a call the run's end cut
    assert len(all_calls) - len(cut) <= sum(server["tool_calls"].values()) <= len(all_calls)
    assert server["sessions"] == {
        "open": 0,
        "opened": 3,
        "closed": 3,
        "dropped": 0,
    }  # one per agent, closed at its stop
    report = (run_dir / "report.md").read_text()
    assert "## MCP" in report and "time in MCP tools" in report and "## Agent loop" in report


def mcp_stats(url: str) -> dict:
    return httpx.get(f"{url}/v1/sim/mcp").json()


def test_a_loop_whose_mcp_session_the_server_ends_goes_on_in_a_new_one(simulator, tmp_path):
    sim = simulator(*MODEL, *TOOLS, "--mcp-idle-timeout", "0.3")  # the SDK ends a session idle 0.3 s
    workload = tmp_path / "w.toml"
    workload.write_text(WORKLOAD.format(url="/mcp"))
    run_dir = tmp_path / "run"
    smoke = ("--load-profile", "smoke", "--peak-users", "2", "--duration", "4s", "--think-time", "0.6")
    run_locust(run_dir, "ChatAgent", "--host", sim.url, *smoke, "--workload", str(workload))
    server = httpx.get(f"{sim.url}/v1/sim/mcp").json()["sessions"]
    agents = pd.read_csv(run_dir / "agents.csv")
    ended = agents["error"].fillna("").str.contains("the server ended the session")
    assert server["dropped"] >= 2 and ended.sum() == server["dropped"]
    assert server["opened"] == server["dropped"] + server["closed"] and server["open"] == 0
    tasks = pd.read_csv(run_dir / "tasks.csv")
    assert (tasks[TASK.end_reason] == "answer").sum() >= 2  # tasks after a lost session still answer


def test_the_loops_mcp_server_may_be_on_another_loopback_origin_than_the_model(simulator, tmp_path):
    model = simulator(*MODEL)  # the model's gateway: its own MCP endpoint is not used
    tools = simulator(*TOOLS)  # an MCP gateway of its own, on another port
    workload = tmp_path / "w.toml"
    workload.write_text(WORKLOAD.format(url=f"{tools.url}/mcp"))
    run_dir = tmp_path / "run"
    smoke = ("--load-profile", "smoke", "--peak-users", "2", "--duration", "3s", "--think-time", "0")
    done = run_locust(run_dir, "ChatAgent", "--host", model.url, *smoke, "--workload", str(workload))
    assert done.returncode == OK, done.stderr[-2000:]
    calls = pd.read_csv(run_dir / "requests.csv").query(f"{REQUEST.operation} == 'mcp.tools_call'")
    answered = calls[calls[REQUEST.error_kind] != ERROR_INTERRUPTED]
    assert len(answered) >= 3 and answered[REQUEST.ok].all()
    assert len(answered) <= sum(mcp_stats(tools.url)["tool_calls"].values()) <= len(calls)
    assert mcp_stats(model.url)["tool_calls"] == {}  # none reached the model's gateway
    wait_for(lambda: mcp_stats(tools.url)["sessions"]["open"] == 0, 2.0, "every MCP session closed")


def test_the_loops_mcp_server_off_this_machine_is_refused_with_one_line(tmp_path):
    workload = tmp_path / "w.toml"
    workload.write_text(WORKLOAD.format(url="http://192.0.2.1:9/mcp"))
    done = run_locust(
        tmp_path / "run", "ChatAgent", "--host", "http://127.0.0.1:9", "--workload", str(workload)
    )
    assert done.returncode == 2 and not (tmp_path / "run").exists()
    lines = [line for line in done.stderr.splitlines() if "[tools] mcp" in line]
    assert len(lines) == 1 and "must be on this machine" in lines[0], done.stderr[-1000:]
