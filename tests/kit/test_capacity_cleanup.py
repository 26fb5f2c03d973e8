"""Capacity against a gateway the kit did not start: measurement first, then the run closes the
sessions it opened (tagged with its run id) and only those; a session someone else opened stays."""

from __future__ import annotations

import httpx
import pytest

from contract import exit_codes
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e


def sessions(url: str, **query) -> list[dict]:
    return httpx.get(f"{url}/v1/agents", params=query, timeout=5).json()["data"]


def test_capacity_on_a_running_gateway_closes_its_own_sessions_only(simulator, tmp_path):
    gateway = simulator("--agent-mib", "4", "--first-agent-mib", "0", "--agent-startup-ms", "0")
    theirs = httpx.post(f"{gateway.url}/v1/agents", json={"run_id": "someone-else"}, timeout=5).json()
    done = run_locust(
        tmp_path / "run",
        "--load-profile",
        "capacity",
        "--host",
        gateway.url,
        "--target-pid",
        str(gateway.pid),
        "--run-id",
        "cap-cleanup",
        "--memory-budget",
        "160MiB",  # the simulator's own ~80 MiB (its MCP server included) and a dozen 4 MiB sessions
    )
    assert done.returncode == exit_codes.OK, done.stderr[-1500:]
    ours = sessions(gateway.url, run_id="cap-cleanup")
    assert len(ours) > 5 and {s["status"] for s in ours} == {"closed"}
    assert [s["status"] for s in sessions(gateway.url, run_id="someone-else")] == [theirs["status"]]
