"""`--gateway mcp` against a real MCP gateway: `mcp-proxy` (PyPI, in a virtualenv of its own: it needs the
SDK 1.x, the kit 2.x) in front of the simulator's stdio MCP server, driven over Streamable HTTP (`/mcp`) and
over its HTTP+SSE transport (`/sse`, where the kit falls back from the POST's 405), as a user runs it.

Truth: the stdio server's own counts (written when the proxy ends it) and its tool knob; the proxy's
`/status` for the SSE sessions left open. Skipped unless an `mcp-proxy` executable is found
(LOADKIT_MCP_PROXY_BIN, or on PATH).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pandas as pd
import pytest

from contract import exit_codes, schema
from contract.schema import AGENT, AGENT_EVENT, REQUEST
from tests.gateways.harness import free_port, running_server
from tests.locust_runs import run_locust, wait_for
from tests.paths import REPO

MCP_PROXY = os.environ.get("LOADKIT_MCP_PROXY_BIN") or shutil.which("mcp-proxy")
pytestmark = [
    pytest.mark.gateways,
    pytest.mark.e2e,
    pytest.mark.skipif(
        not MCP_PROXY, reason="no mcp-proxy executable (set LOADKIT_MCP_PROXY_BIN; see docs/gateways.md)"
    ),
]
TOOL_MS = 30
PROXY_BAR_MS = 60.0  # the proxy's own hop (HTTP in, stdio out, both in Python) on this shared 2-core host


@contextmanager
def mcp_proxy(stats_dir: Path) -> Iterator[str]:
    """mcp-proxy on a free loopback port, its one stdio server the simulator's (counts into `stats_dir`
    when the proxy ends it, at the block's end)."""
    port = free_port()
    server = [sys.executable, "-m", "simgateway.mcp_stdio", "--mcp-tools", "search,fetch"]
    server += ["--mcp-tool-ms", str(TOOL_MS), "--stats-dir", str(stats_dir)]
    command = [str(MCP_PROXY), "--host", "127.0.0.1", "--port", str(port), "--", *server]
    with running_server(command, "/status", port, cwd=REPO) as url:
        yield url


def served(stats_dir: Path) -> dict:
    """The stdio server's counts (one server: the proxy shares it between every client session), written
    as it ends (the proxy's process group was sent SIGTERM)."""
    wait_for(lambda: any(stats_dir.glob("*.json")), 10.0, "the stdio server's counts")
    (path,) = stats_dir.glob("*.json")
    return json.loads(path.read_text())


@pytest.mark.parametrize(("mcp_url", "status"), [("/mcp", 200), ("/sse", 202)])
def test_mcp_proxy_serves_every_session_and_call_over_both_of_its_transports(tmp_path, mcp_url, status):
    run_dir, stats_dir = tmp_path / "run", tmp_path / "stats"
    stats_dir.mkdir()
    # longer than --liveness-timeout (10 s): the preset's /health is a 404 there, /status keeps the run going
    profile = ("--load-profile", "smoke", "--peak-users", "4", "--duration", "12s")
    with mcp_proxy(stats_dir) as url:
        mcp = ("--gateway", "mcp", "--host", url, "--mcp-url", mcp_url, "--health-path", "/status")
        done = run_locust(run_dir, *mcp, *profile, timeout=90)
        left_open = httpx.get(f"{url}/status").json()["active_sse_connections"]
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    server = served(stats_dir)
    requests = pd.read_csv(run_dir / schema.REQUESTS_CSV)
    init = requests[requests[REQUEST.operation] == "mcp.initialize"]
    assert len(init) == 4 and init[REQUEST.ok].all() and set(init[REQUEST.status_code]) == {status}
    every = requests[requests[REQUEST.operation] == "mcp.tools_call"]
    cut = every[every[REQUEST.error_kind] == schema.ERROR_INTERRUPTED]  # the profile's end cut a call
    calls = every.drop(cut.index)
    assert len(calls) >= 24 and calls[REQUEST.ok].all(), calls[REQUEST.error].dropna().head()
    p50, upstream = calls[REQUEST.latency_ms].median(), statistics.median(server["tools_call_ms"])
    assert TOOL_MS <= upstream <= p50 <= upstream + PROXY_BAR_MS, (p50, upstream)
    assert len(calls) <= sum(server["tool_calls"].values()) <= len(every)
    # the proxy answers each client's initialize itself: upstream, one session of its own
    assert server["methods"]["initialize"] == 1 and set(server["clients"]) == {"mcp"}
    events = pd.read_csv(run_dir / schema.AGENTS_CSV)[AGENT.event].value_counts().to_dict()
    assert events == {AGENT_EVENT.created: 4, AGENT_EVENT.closed: 4}
    assert left_open == 0  # over /sse, every stream closed by the kit (none was opened over /mcp)
