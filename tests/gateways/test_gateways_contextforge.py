"""IBM ContextForge in front of the simulator's MCP endpoint, driven by `--gateway mcp` at its virtual
server (/servers/ID/mcp) with a JWT from its own token tool: a smoke run and a churn run pass; the
tools/call the simulator itself counted behind the gateway equal the kit's rows, per tool (ContextForge
lists them as `sim-<tool>`); the gateway's own session table held the run's sessions and holds none
after; memory is sampled on the gateway's process.
"""

from __future__ import annotations

import pandas as pd
import pytest

from analysis import churn as churn_study
from contract import exit_codes, schema
from simgateway import launch
from tests.gateways.contextforge import BACKEND, NEEDS_CONTEXTFORGE, contextforge_gateway
from tests.gateways.harness import rows
from tests.gateways.mcp_runs import (
    KEY_ENV,
    SIM_KNOBS,
    assert_sampled_the_gateway,
    assert_server_counted_the_kits_calls,
    calls_by_tool,
    mcp_args,
    run_polling,
    session_events,
    sim_tool_calls,
    smoke_args,
)

pytestmark = NEEDS_CONTEXTFORGE
AGENTS = 4
MIX = f"{BACKEND}-search=2,{BACKEND}-fetch=1"


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """The simulator, and ContextForge fronting its /mcp (start-up and migrations: ~15 s), for the module;
    the gateway's token in the kit's key variable."""
    with (
        launch.running(SIM_KNOBS) as sim,
        contextforge_gateway(f"{sim.url}/mcp", tmp_path_factory.mktemp("contextforge")) as gateway,
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv(KEY_ENV, gateway.token)
        yield sim, gateway


def backend_name(tool: str) -> str:
    return tool.removeprefix(f"{BACKEND}-")


def test_smoke_through_contextforge_every_call_reaches_the_server_and_no_session_is_left(stack, tmp_path):
    sim, gateway = stack
    before = sim_tool_calls(sim.url)
    args = smoke_args(gateway.url, gateway.server_path, gateway.pid, "--mcp-tool-mix", MIX, agents=AGENTS)
    code, peak, stderr = run_polling(tmp_path, args, gateway.open_sessions)
    assert code == exit_codes.OK, stderr
    answered, cut = calls_by_tool(tmp_path, backend_name)
    assert set(answered) == {"search", "fetch"} and sum(answered.values()) >= 10, answered
    assert_server_counted_the_kits_calls(answered, cut, sim_tool_calls(sim.url) - before)
    assert peak == AGENTS and gateway.open_sessions() == 0  # the gateway held each session, then none
    assert session_events(tmp_path) == {"created": AGENTS, "closed": AGENTS}
    assert_sampled_the_gateway(tmp_path, gateway.pid)
    calls = pd.read_csv(tmp_path / schema.REQUESTS_CSV).query("operation == 'mcp.tools_call' and ok == 1")
    print(
        f"contextforge: {len(calls)} calls, p50 {calls['latency_ms'].median():.1f} ms, peak {peak} sessions"
    )


def test_churn_through_contextforge_closes_every_session_on_the_gateway(stack, tmp_path):
    _sim, gateway = stack
    args = mcp_args(gateway.url, gateway.server_path, "--target-pid", str(gateway.pid))
    args += ["--load-profile", "churn", "--churn-cycles", "4", "--churn-batch", "3"]
    code, _peak, stderr = run_polling(tmp_path, args, gateway.open_sessions)
    assert code == exit_codes.OK, stderr
    result = churn_study.churn_result(pd.read_csv(tmp_path / schema.CAPACITY_CSV))
    assert result.sessions_closed == 12, result
    closes = [r for r in rows(tmp_path, schema.REQUESTS_CSV) if r["operation"] == "mcp.close"]
    assert len(closes) == 12 and all(r["ok"] == "1" and r["status_code"] == "200" for r in closes), closes
    assert gateway.open_sessions() == 0
    print(f"contextforge churn: {result.verdict}")
