"""IBM ContextForge in front of the simulator's MCP endpoint, driven by `--gateway mcp` at its virtual
server (/servers/ID/mcp) with a JWT from its own token tool: a smoke run and a churn run pass; the
tools/call the simulator itself counted behind the gateway equal the kit's rows, per tool (ContextForge
lists them as `sim-<tool>`); the gateway's own session table held the run's sessions and holds none
after; memory is sampled on the gateway's process (tests/gateways/mcp_runs.py).
"""

from __future__ import annotations

import pytest

from simgateway import launch
from tests.gateways.contextforge import NEEDS_CONTEXTFORGE, contextforge_gateway
from tests.gateways.mcp_runs import (
    AGENTS,
    BATCH,
    CYCLES,
    KEY_ENV,
    SIM_KNOBS,
    McpGateway,
    Sessions,
    churn_through,
    cleanup_through,
    smoke_through,
)

pytestmark = NEEDS_CONTEXTFORGE


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The simulator and ContextForge fronting its /mcp (start-up and migrations: ~15 s), for the module;
    the gateway's token in the kit's key variable. Its session table does not say whose a session is:
    every session it holds is counted."""
    with (
        launch.running(SIM_KNOBS) as sim,
        contextforge_gateway(f"{sim.url}/mcp", tmp_path_factory.mktemp("contextforge")) as forge,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv(KEY_ENV, forge.token)
        yield sim, McpGateway(forge.url, forge.server_path, forge.pid, lambda _client: forge.open_sessions())


def test_smoke_through_contextforge_every_call_reaches_the_server_and_no_session_is_left(stack, tmp_path):
    sim, gateway = stack
    # its session count is of every client: the kit's liveness probe holds one beside the agents'
    assert smoke_through(gateway, sim.url, tmp_path) == Sessions(peak=AGENTS + 1, after=0)


def test_churn_through_contextforge_closes_every_session_on_the_gateway(stack, tmp_path):
    _sim, gateway = stack
    assert churn_through(gateway, tmp_path) == (CYCLES * BATCH, 0)  # (closed, left on the gateway)


def test_kit_cleanup_closes_the_sessions_a_run_left_on_contextforge(stack, tmp_path):
    _sim, gateway = stack
    assert cleanup_through(gateway, tmp_path) == (AGENTS, 0)  # (left by the run, left after cleanup)
