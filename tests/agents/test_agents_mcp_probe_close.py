"""The MCP liveness probe's last close waits for a server slower than the probe's own deadline: the run
is over, and a DELETE cut short would leave the probe's session open on the server.

Truth: the simulator's own count of open MCP sessions. The server is frozen (SIGSTOP) when the close is
sent and thawed after twice the probe's deadline, so the DELETE cannot be answered within that deadline.
"""

from __future__ import annotations

import gevent
import httpx
import pytest

from agents.mcp.probe import McpPing
from agents.settings import AgentSettings
from tests.fault_runs import freeze, thaw

pytestmark = pytest.mark.e2e

PROBE_S = 1.0


def open_sessions(url: str) -> int:
    return httpx.get(f"{url}/v1/sim/mcp", timeout=10).json()["sessions"]["open"]


def test_the_probes_last_close_outwaits_a_server_slower_than_the_probes_deadline(simulator):
    gateway = simulator("--mcp-preload")
    ping = McpPing(AgentSettings(run_id="probe-close"), gateway.url, PROBE_S)
    assert ping.probe() is None and ping.probe() is None  # opened, then pinged
    assert open_sessions(gateway.url) == 1
    freeze(gateway.pid)
    thawing = gevent.spawn_later(2 * PROBE_S, thaw, gateway.pid)
    try:
        ping.close()
    finally:
        thawing.join(10)
        thaw(gateway.pid)
    assert open_sessions(gateway.url) == 0
