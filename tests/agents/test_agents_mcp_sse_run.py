"""`--gateway mcp` against a server of the 2024-11-05 HTTP+SSE transport only (the simulator's `/sse`, whose
POST is 405), as a user runs it: every session falls back to the event stream, the tool latency reads back
the knob, every call the server counted is a row, and every session (its stream) is closed at the end.
"""

from __future__ import annotations

import json
import statistics

import pytest

from contract import exit_codes, schema
from contract.schema import AGENT, AGENT_EVENT, REQUEST
from simgateway import launch
from tests.agents.test_agents_mcp import (
    ADDED_BAR_MS,
    PRELOAD,
    TOOL_MS,
    TTFT_BAR_MS,
    rows,
    run_id_of,
    smoke,
    stats,
)

pytestmark = pytest.mark.e2e


def test_an_sse_only_server_is_driven_over_its_stream_with_every_call_and_session_accounted(tmp_path):
    knobs = [PRELOAD, "--mcp-tools", "search,fetch", "--mcp-tool-ms", str(TOOL_MS), "--mcp-progress", "1"]
    with launch.running(knobs) as gw:
        done = smoke(tmp_path, gw.url, "--mcp-url", "/sse", "--mcp-tool-mix", "search=3,fetch=1")
        server = stats(gw.url)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    requests = rows(tmp_path)
    init = requests[requests[REQUEST.operation] == "mcp.initialize"]
    assert len(init) == 4 and init[REQUEST.ok].all()
    assert set(init[REQUEST.status_code]) == {202}  # answered on the stream: the POST to the endpoint is 202
    every = requests[requests[REQUEST.operation] == "mcp.tools_call"]
    cut = every[every[REQUEST.error_kind] == schema.ERROR_INTERRUPTED]
    calls = every.drop(cut.index)
    assert len(calls) >= 20 and calls[REQUEST.ok].all(), calls[REQUEST.error].dropna().head()
    p50 = calls[REQUEST.latency_ms].median()
    assert TOOL_MS <= p50 <= TOOL_MS + TTFT_BAR_MS, p50
    served = statistics.median(server["tools_call_ms"])  # dispatch to result on the server
    assert served <= p50 <= served + ADDED_BAR_MS, (p50, served)
    assert len(calls) <= sum(server["tool_calls"].values()) <= len(every)
    assert calls[REQUEST.session_id].str.fullmatch("[0-9a-f]{32}").all()  # the endpoint's session_id
    # the kit's own two (the mix's check before load, the liveness probe's) beside the agents' four
    assert server["sessions"] == {"open": 0, "opened": 6, "closed": 6, "dropped": 0}
    run_id = run_id_of(tmp_path)
    assert server["clients"] == {f"loadkit-{run_id}": 4, f"loadkit-{run_id}-probe": 2}
    assert server["methods"]["notifications/initialized"] == 6
    events = rows(tmp_path, schema.AGENTS_CSV)[AGENT.event].value_counts().to_dict()
    assert events == {AGENT_EVENT.created: 4, AGENT_EVENT.closed: 4}
    assert "| left open | 0 |" in (tmp_path / schema.REPORT_MD).read_text()
    assert (
        json.loads((tmp_path / schema.RUN_JSON).read_text())["target"]["mcp_url"] == "/sse"
    )  # kit.cleanup's
