"""`--gateway mcp` against the simulator's MCP endpoint, as a user runs it (Locust in a subprocess): the
tool latency read back from a known knob, every call the server counted is a row, every session closed,
the run id in each session's client info; errors, isError and server requests as rows; bad servers as
failed sessions with one clear line; an MCP URL off --host's origin refused.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import httpx
import pandas as pd
import pytest

from contract import exit_codes, schema
from contract.schema import AGENT, AGENT_EVENT, REQUEST
from simgateway import launch
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e

TOOL_MS = 50
PRELOAD = "--mcp-preload"  # the SDK loaded before the ready line, not in a timed run
TTFT_BAR_MS = 25.0  # the chat timing tests' bar against the simulator's knob (KNOB_BAR_MS)
ADDED_BAR_MS = 10.0  # the kit's time beyond the server's own (loopback, the client's reading)


def smoke(run_dir: Path, host: str | None, *extra: str, agents: int = 4, duration: str = "6s"):
    host_args = ("--host", host) if host else ()
    profile = ("--load-profile", "smoke", "--peak-users", str(agents), "--duration", duration)
    return run_locust(run_dir, "--gateway", "mcp", *host_args, *profile, *extra, timeout=90)


def rows(run_dir: Path, name: str = schema.REQUESTS_CSV) -> pd.DataFrame:
    return pd.read_csv(run_dir / name)


def stats(url: str) -> dict:
    return httpx.get(f"{url}/v1/sim/mcp").json()


def run_id_of(run_dir: Path) -> str:
    return str(pd.read_json(run_dir / schema.RUN_JSON, typ="series")["run_id"])


def test_tools_call_latency_reads_the_tool_knob_and_every_call_and_session_is_accounted(tmp_path):
    knobs = [PRELOAD, "--mcp-tools", "search,fetch,lookup", "--mcp-tool-ms", str(TOOL_MS)]
    with launch.running(knobs) as gw:
        done = smoke(tmp_path, gw.url, "--mcp-tool-mix", "search=2,fetch=1,lookup=1")
        server = stats(gw.url)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    requests = rows(tmp_path)
    every = requests[requests[REQUEST.operation] == "mcp.tools_call"]
    cut = every[every[REQUEST.error_kind] == schema.ERROR_INTERRUPTED]  # the profile's end cut a call
    calls = every.drop(cut.index)
    assert len(calls) >= 20 and calls[REQUEST.ok].all()
    p50 = calls[REQUEST.latency_ms].median()
    assert TOOL_MS <= p50 <= TOOL_MS + TTFT_BAR_MS, p50
    served = statistics.median(server["tools_call_ms"])  # the server's own time: the knob plus the SDK's
    assert served <= p50 <= served + ADDED_BAR_MS, (p50, served)
    answered = calls.groupby(REQUEST.tool_name).size()
    cut_by_tool = cut.groupby(REQUEST.tool_name).size().reindex(answered.index, fill_value=0)
    for name, n in answered.items():  # a call cut at the end may still have run on the server
        assert n <= server["tool_calls"][name] <= n + cut_by_tool[name], (name, n, server["tool_calls"])
    assert set(server["tool_calls"]) == set(answered.index) and len(cut) <= 4
    assert (calls[REQUEST.response_bytes] > 256).all()  # the 256-byte result, its JSON-RPC and SSE framing
    # the kit's own two (the mix's check before load, the liveness probe's) beside the agents' four
    assert server["sessions"] == {"open": 0, "opened": 6, "closed": 6, "dropped": 0}
    run_id = run_id_of(tmp_path)
    assert server["clients"] == {f"loadkit-{run_id}": 4, f"loadkit-{run_id}-probe": 2}
    events = rows(tmp_path, schema.AGENTS_CSV)[AGENT.event].value_counts().to_dict()
    assert events == {AGENT_EVENT.created: 4, AGENT_EVENT.closed: 4}
    ops = set(requests[REQUEST.operation])
    assert {"mcp.initialize", "mcp.tools_list", "mcp.tools_call", "mcp.close"} <= ops
    report = (tmp_path / schema.REPORT_MD).read_text()
    assert "## MCP" in report and "| left open | 0 |" in report and "| search |" in report


def test_rpc_errors_is_error_results_and_server_requests_are_rows_the_server_agrees_with(tmp_path):
    knobs = [PRELOAD, "--mcp-error-rate", "0.3", "--mcp-is-error-rate", "0.3", "--mcp-client-requests", "1"]
    knobs += ["--mcp-progress", "2"]  # progress notifications ride each call's stream
    with launch.running([*knobs, "--mcp-tool-ms", "20"]) as gw:
        done = smoke(tmp_path, gw.url)
        server = stats(gw.url)
    assert done.returncode == exit_codes.REQUEST_ERRORS, done.stderr[-2000:]
    every = rows(tmp_path).query(f"{REQUEST.operation} == 'mcp.tools_call'")
    cut = every[every[REQUEST.error_kind] == schema.ERROR_INTERRUPTED]  # the profile's end cut a call
    calls = every.drop(cut.index)
    rpc = calls[calls[REQUEST.error_kind] == schema.ERROR_RPC]
    tool = calls[calls[REQUEST.error_kind] == schema.ERROR_TOOL]
    assert len(rpc) <= sum(server["tool_errors"].values()) <= len(rpc) + len(cut) and len(rpc) > 0
    assert set(rpc[REQUEST.rpc_error_code]) == {-32603}
    assert len(tool) <= sum(server["tool_is_error"].values()) <= len(tool) + len(cut) and len(tool) > 0
    # every call answered, none hung on its roots/list: each got the kit's JSON-RPC error
    assert len(calls) <= sum(server["tool_calls"].values()) <= len(every) and len(cut) <= 4
    assert len(calls) <= server["client_refusals"] <= len(every)
    assert server["sessions"]["open"] == 0


@pytest.mark.parametrize(
    ("knobs", "kind", "says"),
    [
        (["--mcp-initialize", "hang"], "timeout", "no complete answer within --request-timeout"),
        (["--mcp-initialize", "wrong-version"], "protocol", "protocol version '1999-01-01'"),
        (["--mcp-initialize", "invalid"], "protocol", "not a JSON-RPC 2.0 message"),
        (["--hostile", "garbage"], "timeout", "no complete answer within --request-timeout"),  # endless
        (["--hostile", "huge-body", "--hostile-bytes", "12000000"], "too_large", "--max-response-bytes"),
    ],
)
def test_a_bad_server_fails_each_session_with_one_clear_line(tmp_path, knobs, kind, says):
    caps = ("--request-timeout", "2", "--max-response-bytes", str(10 * 1024 * 1024))  # a 12 MB answer
    with launch.running([PRELOAD, *knobs]) as gw:
        done = smoke(tmp_path, gw.url, *caps, agents=2, duration="3s")
    assert done.returncode in (exit_codes.REQUEST_ERRORS, exit_codes.LOAD_NOT_DELIVERED), done.stderr[-2000:]
    init = rows(tmp_path).query(f"{REQUEST.operation} == 'mcp.initialize'")
    assert len(init) == 2 and not init[REQUEST.ok].any()
    assert set(init[REQUEST.error_kind]) == {kind}
    assert all(says in e and "\n" not in e for e in init[REQUEST.error]), list(init[REQUEST.error])
    agents = rows(tmp_path, schema.AGENTS_CSV)
    assert list(agents[AGENT.event]) == [AGENT_EVENT.failed] * 2


def test_an_mcp_url_off_the_hosts_origin_is_refused_with_one_line(tmp_path):
    with launch.running([PRELOAD]) as gw:
        done = smoke(tmp_path, gw.url, "--mcp-url", "http://127.0.0.2:9/mcp", agents=1, duration="2s")
    assert done.returncode == exit_codes.BAD_INPUT
    lines = [line for line in done.stderr.splitlines() if "--mcp-url" in line]
    assert len(lines) == 1 and "not on the target" in lines[0], done.stderr[-1000:]


def test_without_host_the_embedded_simulators_mcp_endpoint_is_driven_under_an_open_model(tmp_path):
    done = smoke(tmp_path, None, "--arrival-rate", "10", "--max-agents", "4", agents=2, duration="4s")
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    calls = rows(tmp_path).query(f"{REQUEST.operation} == 'mcp.tools_call'")
    assert len(calls) >= 20 and calls[REQUEST.ok].all()
    assert calls[REQUEST.start_lateness_ms].notna().all()  # one arrival is one tools/call
    events = rows(tmp_path, schema.AGENTS_CSV)[AGENT.event].value_counts().to_dict()
    assert events[AGENT_EVENT.created] == events[AGENT_EVENT.closed] == 4


def test_a_session_the_server_ends_mid_run_is_recorded_closed_and_a_new_one_opened(tmp_path):
    with launch.running([PRELOAD, "--mcp-idle-timeout", "0.3"]) as gw:  # the SDK ends a session idle 0.3 s
        # the simulator's /health named: an MCP probe's session, pinged each second, would be ended too
        done = smoke(
            tmp_path, gw.url, "--think-time", "0.6", "--health-path", "/health", agents=2, duration="4s"
        )
        server = stats(gw.url)
    assert done.returncode == exit_codes.REQUEST_ERRORS, done.stderr[-2000:]
    calls = rows(tmp_path).query(f"{REQUEST.operation} == 'mcp.tools_call'")
    lost = calls[calls[REQUEST.status_code] == 404]
    assert len(lost) >= 2 and (lost[REQUEST.error_kind] == "http_4xx").all()
    agents = rows(tmp_path, schema.AGENTS_CSV)
    ended = agents[agents[AGENT.error].fillna("").str.contains("the server ended the session")]
    assert len(ended) == server["sessions"]["dropped"] >= len(lost)  # also those its final DELETE found
    created = agents[agents[AGENT.event] == AGENT_EVENT.created]
    assert len(created) + 1 == server["sessions"]["opened"] > 3  # each lost one replaced; +1: the mix's check
    assert server["sessions"]["open"] == 0


def test_a_mix_weighing_resources_prompts_and_ping_makes_their_rows_as_documented(tmp_path):
    mix = "search=1,mcp.resources_read=1,mcp.prompts_get=1,mcp.ping=1"
    with launch.running([PRELOAD]) as gw:
        done = smoke(tmp_path, gw.url, "--mcp-tool-mix", mix, "--think-time", "0.05", agents=2, duration="3s")
        server = stats(gw.url)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    requests = rows(tmp_path)
    answered = requests[requests[REQUEST.error_kind] != schema.ERROR_INTERRUPTED]
    counts = answered.groupby(REQUEST.operation).size().to_dict()
    for operation in ("mcp.tools_call", "mcp.resources_read", "mcp.prompts_get", "mcp.ping"):
        assert counts.get(operation, 0) >= 3, counts
    assert counts["mcp.resources_list"] == counts["mcp.prompts_list"] == 2  # once per session
    assert answered[REQUEST.ok].all(), answered[REQUEST.error].dropna().head()
    sent = requests.groupby(REQUEST.operation).size().to_dict()  # a row the run's end cut may have arrived
    for operation, method in (("mcp.resources_read", "resources/read"), ("mcp.prompts_get", "prompts/get")):
        assert counts[operation] <= server["methods"][method] <= sent[operation], (
            operation,
            server["methods"],
        )
    assert server["methods"]["ping"] >= counts["mcp.ping"]  # the liveness probe's pings too
