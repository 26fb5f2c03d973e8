"""`--gateway mcp --mcp-command` against the simulator's MCP server over stdio (`simgateway.mcp_stdio`, a
process per simulated agent), as a user runs it: the tool latency read back from a known knob, every
call each server counted is a row of its session, every session closed; a server that exits mid-run or
writes garbage is one clear line per failed request, the rows before it kept; no server process
outlives the run; an agent loop's `[tools] mcp = "COMMAND"` runs its tools there. The stdio client
alone: overlapping calls on one session each get their own answer, and the server's own requests are
refused, never left waiting.

Truth: the servers' counts, which each process writes to --stats-dir/PID.json at its end (the session
id of its rows is `stdio-PID`).
"""

from __future__ import annotations

import json
import shlex
import statistics
import sys
import time
from pathlib import Path

import gevent
import pandas as pd
import psutil
import pytest

from agents.mcp.stdio import McpStdioSession
from agents.wire.reading import ReadBounds
from contract import exit_codes, schema
from contract.schema import AGENT, AGENT_EVENT, REQUEST, TASK
from simgateway.client import request
from tests.agents.test_agents_loop_mcp import MODEL as LOOP_MODEL
from tests.agents.test_agents_mcp import ADDED_BAR_MS, TOOL_MS, TTFT_BAR_MS, rows, run_id_of
from tests.locust_runs import run_locust, wait_for

pytestmark = pytest.mark.e2e

PYTHON = sys.executable


def server_command(stats: Path, *knobs: str) -> str:
    """The stdio server, its counts to `stats` (a folder only this test uses: its processes are found
    by it)."""
    return shlex.join([PYTHON, "-m", "simgateway.mcp_stdio", "--stats-dir", str(stats), *knobs])


def counts(stats: Path) -> dict[str, dict]:
    """Each server process's counts, by the session id of its rows."""
    return {f"stdio-{p.stem}": json.loads(p.read_text()) for p in stats.glob("*.json")}


def agents_and_probes(servers: dict[str, dict]) -> tuple[dict[str, dict], dict[str, dict]]:
    """The agents' server processes, and the kit's own (the tool mix's check before load: its client
    name ends in -probe)."""
    probe = {k: v for k, v in servers.items() if any(name.endswith("-probe") for name in v["clients"])}
    return {k: v for k, v in servers.items() if k not in probe}, probe


def left_running(marker: str) -> list[int]:
    """Processes still running whose command line names `marker` (zombies are gone already)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or ())
        if (
            marker in cmdline
            and proc.info["status"] != psutil.STATUS_ZOMBIE
            and proc.pid != psutil.Process().pid
        ):
            found.append(proc.pid)
    return found


def smoke(run_dir: Path, command: str, *extra: str, agents: int = 2, duration: str = "8s"):
    profile = ("--load-profile", "smoke", "--peak-users", str(agents), "--duration", duration)
    return run_locust(run_dir, "--gateway", "mcp", "--mcp-command", command, *profile, *extra, timeout=90)


def tool_calls(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The answered tools/call rows and those the run's end cut."""
    every = rows(run_dir).query(f"{REQUEST.operation} == 'mcp.tools_call'")
    cut = every[every[REQUEST.error_kind] == schema.ERROR_INTERRUPTED]
    return every.drop(cut.index), cut


def test_stdio_tools_call_latency_reads_the_tool_knob_and_each_servers_calls_are_its_rows(tmp_path):
    stats = tmp_path / "stats"
    stats.mkdir()
    command = server_command(stats, "--mcp-tools", "search,fetch,lookup", "--mcp-tool-ms", str(TOOL_MS))
    done = smoke(
        tmp_path / "run", command, "--think-time", "0.1", "--mcp-tool-mix", "search=2,fetch=1,lookup=1"
    )
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    assert left_running(str(stats)) == []
    run_dir = tmp_path / "run"
    calls, cut = tool_calls(run_dir)
    assert len(calls) >= 20 and calls[REQUEST.ok].all() and len(cut) <= 2
    p50 = calls[REQUEST.latency_ms].median()
    assert TOOL_MS <= p50 <= TOOL_MS + TTFT_BAR_MS, p50
    servers, probes = agents_and_probes(counts(stats))
    assert len(probes) == 1 and not any(c["tool_calls"] for c in probes.values())  # the mix's check
    served = statistics.median([ms for c in servers.values() for ms in c["tools_call_ms"]])
    assert served <= p50 <= served + ADDED_BAR_MS, (p50, served)  # the server's own time, its dispatch on
    assert set(servers) == set(calls[REQUEST.session_id]) and len(servers) == 2
    for session_id, server in servers.items():  # a call cut at the end may still have run on the server
        mine, mine_cut = (
            calls[calls[REQUEST.session_id] == session_id],
            cut[cut[REQUEST.session_id] == session_id],
        )
        answered = mine.groupby(REQUEST.tool_name).size().to_dict()
        assert set(server["tool_calls"]) == set(answered), (server["tool_calls"], answered)
        for name, n in answered.items():
            assert n <= server["tool_calls"][name] <= n + len(mine_cut), (session_id, name, n, server)
        assert server["clients"] == {f"loadkit-{run_id_of(run_dir)}": 1}
    assert (calls[REQUEST.response_bytes] > 256).all() and calls[REQUEST.status_code].isna().all()
    agents = rows(run_dir, schema.AGENTS_CSV)
    assert agents[AGENT.event].value_counts().to_dict() == {AGENT_EVENT.created: 2, AGENT_EVENT.closed: 2}
    ops = rows(run_dir)[REQUEST.operation]
    closes = rows(run_dir)[ops == "mcp.close"]
    assert len(closes) == 2 and closes[REQUEST.ok].all()  # each server exited when its stdin closed
    report = (run_dir / schema.REPORT_MD).read_text()
    assert "## MCP" in report and "| left open | 0 |" in report and "| search |" in report


def test_a_stdio_server_that_exits_mid_run_fails_that_call_with_one_line_and_a_new_one_goes_on(tmp_path):
    stats = tmp_path / "stats"
    stats.mkdir()
    command = server_command(stats, "--mcp-tool-ms", "20", "--exit-after-calls", "3")
    done = smoke(tmp_path / "run", command, "--think-time", "0.2", agents=1, duration="8s")
    # a replacement still starting when the run ends is cut: the load may then count as not delivered
    assert done.returncode in (exit_codes.REQUEST_ERRORS, exit_codes.LOAD_NOT_DELIVERED), done.stderr[-2000:]
    assert left_running(str(stats)) == []
    calls, _ = tool_calls(tmp_path / "run")
    failed = calls[~calls[REQUEST.ok].astype(bool)]
    assert len(failed) >= 1 and (failed[REQUEST.error_kind] == "connection").all()
    assert all("closed its output (exit code 3)" in e and "\n" not in e for e in failed[REQUEST.error])
    servers = counts(stats)
    for session_id in failed[REQUEST.session_id]:  # each exited after its 3 answered calls, all rows kept
        mine = calls[calls[REQUEST.session_id] == session_id]
        assert mine[REQUEST.ok].sum() == 3 == sum(servers[session_id]["tool_calls"].values())
    agents = rows(tmp_path / "run", schema.AGENTS_CSV)
    ended = agents[agents[AGENT.error].fillna("").str.contains("ended the session \\(exit code 3\\)")]
    opened = agents[AGENT.event].isin([AGENT_EVENT.created, AGENT_EVENT.failed]).sum()
    # each ended session was replaced, but the last one's replacement may be cut by the run's end
    assert len(ended) == len(failed) and len(failed) <= opened <= len(failed) + 1


@pytest.mark.parametrize(
    ("program", "kind", "says"),
    [
        (
            "print('this is not JSON-RPC', flush=True); import time; time.sleep(60)",
            "protocol",
            "not JSON-RPC",
        ),
        ("import sys; sys.exit(3)", "connection", "(exit code 3)"),  # its input or output closed first
    ],
)
def test_a_stdio_server_that_writes_garbage_or_exits_fails_each_session_with_one_line(
    tmp_path, program, kind, says
):
    marker = f"garbage-{tmp_path.name}"
    command = shlex.join([PYTHON, "-c", f"{program}  # {marker}"])
    done = smoke(tmp_path, command, "--request-timeout", "20", duration="3s")
    assert done.returncode in (exit_codes.REQUEST_ERRORS, exit_codes.LOAD_NOT_DELIVERED), done.stderr[-2000:]
    assert left_running(marker) == []  # the one that slept on was stopped with its failed session
    init = rows(tmp_path).query(f"{REQUEST.operation} == 'mcp.initialize'")
    assert len(init) == 2 and not init[REQUEST.ok].any() and set(init[REQUEST.error_kind]) == {kind}
    assert all(says in e and "\n" not in e for e in init[REQUEST.error]), list(init[REQUEST.error])
    assert (init[REQUEST.latency_ms] < 10_000).all()  # the first line said it: no wait for the timeout
    assert list(rows(tmp_path, schema.AGENTS_CSV)[AGENT.event]) == [AGENT_EVENT.failed] * 2


def test_overlapping_calls_on_one_stdio_session_get_their_own_answers_and_server_requests_are_refused(
    tmp_path,
):
    stats = tmp_path / "stats"
    stats.mkdir()
    command = server_command(
        stats, "--mcp-tool-ms", "300", "--mcp-client-requests", "1", "--mcp-progress", "2"
    )
    session = McpStdioSession(command, ReadBounds(30.0, 1 << 20, 1 << 16), {"name": "probe", "version": "1"})
    try:
        assert session.initialize().ok and session.protocol_version == "2025-11-25"
        session.initialized()
        started = time.perf_counter()
        asked = [
            {"name": "search", "arguments": {"query": f"q{n}"}, "_meta": {"progressToken": f"t{n}"}}
            for n in range(4)
        ]
        greenlets = [gevent.spawn(session.request, "tools/call", params) for params in asked]
        gevent.joinall(greenlets, raise_error=True)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        assert all(g.value.ok and g.value.result["isError"] is False for g in greenlets)
        assert elapsed_ms < 2 * 300, elapsed_ms  # the four ran at once on the server, not one by one
        assert session.refused == 4  # each call's roots/list got the kit's JSON-RPC error
        assert session.notifications == 4 * 2  # --mcp-progress: two progress notifications a call
        assert session.close().ok
    finally:
        session.end()
    wait_for(lambda: len(counts(stats)) == 1, 10, "the server's counts")
    (server,) = counts(stats).values()
    assert server["tool_calls"] == {"search": 4} and server["client_refusals"] == 4
    assert server["methods"]["notifications/initialized"] == 1


def test_an_agent_loops_tools_from_a_stdio_server_are_its_tools_list_and_each_call_a_row(simulator, tmp_path):
    sim = simulator(*LOOP_MODEL)
    stats = tmp_path / "stats"
    stats.mkdir()
    command = server_command(stats, "--mcp-tools", "search,fetch,lookup", "--mcp-tool-ms", "30")
    workload = tmp_path / "w.toml"
    workload.write_text(f"[tools]\nmcp = {json.dumps(command)}\n\n[loop]\nmax_steps = 10\n")
    run_dir = tmp_path / "run"
    smoke = ("--load-profile", "smoke", "--peak-users", "2", "--duration", "8s", "--think-time", "0")
    done = run_locust(run_dir, "ChatAgent", "--host", sim.url, *smoke, "--workload", str(workload))
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    assert left_running(str(stats)) == []
    tasks = pd.read_csv(run_dir / schema.TASKS_CSV)
    finished = tasks[tasks[TASK.status] != "unfinished"]
    assert len(finished) >= 3 and (finished[TASK.end_reason] == "answer").all()
    assert (finished[TASK.tool_calls] == 3).all() and (finished[TASK.tool_ms] >= 3 * 30).all()
    requests = rows(run_dir)
    truth = {c["id"]: c for c in request(sim.url, "GET", "/v1/sim/calls").json()["calls"]}
    for task_id in finished[TASK.task_id]:
        mine = requests[requests[REQUEST.task_id] == task_id]
        tools = mine[mine[REQUEST.operation] == "mcp.tools_call"].sort_values(REQUEST.step)
        assert list(tools[REQUEST.step]) == [1, 2, 3] and tools[REQUEST.ok].all()
        model = mine[mine[REQUEST.operation] == "chat.stream"]
        assert all(
            truth[r]["tools_offered"] == ["search", "fetch", "lookup"] for r in model[REQUEST.request_id]
        )
    calls, cut = tool_calls(run_dir)
    servers = counts(stats)
    assert set(servers) == set(calls[REQUEST.session_id]) and len(servers) == 2  # one process per agent
    served = sum(sum(s["tool_calls"].values()) for s in servers.values())
    assert len(calls) <= served <= len(calls) + len(cut)
    agents = rows(run_dir, schema.AGENTS_CSV)
    assert agents[AGENT.event].value_counts().to_dict() == {AGENT_EVENT.created: 2, AGENT_EVENT.closed: 2}
