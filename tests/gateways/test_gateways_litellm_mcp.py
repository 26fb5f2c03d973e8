"""LiteLLM's MCP gateway (the proxy's `mcp_servers:`, litellm[proxy] of requirements-gateways.txt) in
front of the simulator's MCP endpoint, driven by `--gateway mcp` at its `/mcp/` with the master key: a
smoke run and a churn run pass; the tools/call the simulator itself counted behind the gateway equal the
kit's rows, per tool (LiteLLM lists them as `sim-<tool>`); the gateway's own session report
(`GET /v1/mcp/sessions`, by client name) showed the run's sessions and shows none after; memory is
sampled on its process (tests/gateways/mcp_runs.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from simgateway import launch
from tests.gateways.harness import LITELLM_TESTS, free_port, listening_pid, running_server
from tests.gateways.mcp_runs import (
    AGENTS,
    BACKEND,
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

pytestmark = LITELLM_TESTS
CONFIG = """model_list: []
mcp_servers:
  {name}:
    url: {url}
    transport: http
litellm_settings:
  telemetry: false
general_settings:
  master_key: os.environ/LITELLM_MASTER_KEY
"""


def session_count(url: str, key: str) -> Callable[[str], int]:
    """LiteLLM's own count of its live MCP sessions of one client name (its session report's by_client)."""

    def of(client: str) -> int:
        headers = {"Authorization": f"Bearer {key}"}
        report = httpx.get(f"{url}/v1/mcp/sessions", headers=headers, timeout=10).raise_for_status().json()
        return sum(int(c["count"]) for c in report["by_client"] if c["label"] == client)

    return of


@contextmanager
def litellm_mcp(backend_url: str, folder: Path) -> Iterator[tuple[McpGateway, str]]:
    """LiteLLM's proxy on a free port with `backend_url` as its one MCP server: the gateway and its
    master key, made here and handed over by environment only (the config names the variable)."""
    config = folder / "litellm_mcp.yaml"
    config.write_text(CONFIG.format(name=BACKEND, url=backend_url))
    key = f"sk-{secrets.token_urlsafe(24)}"
    env = {**os.environ, "LITELLM_MASTER_KEY": key, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    port = free_port()
    command = [shutil.which("litellm") or "litellm", "--config", str(config), "--host", "127.0.0.1"]
    with running_server([*command, "--port", str(port)], "/health/liveliness", port, 90, env=env) as url:
        yield McpGateway(url, "/mcp/", listening_pid(port), session_count(url, key)), key


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    with (
        launch.running(SIM_KNOBS) as sim,
        litellm_mcp(f"{sim.url}/mcp", tmp_path_factory.mktemp("litellm-mcp")) as (gateway, key),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setenv(KEY_ENV, key)
        yield sim, gateway


def test_smoke_through_litellms_mcp_gateway_every_call_reaches_the_server_and_none_is_left(stack, tmp_path):
    sim, gateway = stack
    assert smoke_through(gateway, sim.url, tmp_path) == Sessions(peak=AGENTS, after=0)


def test_churn_through_litellms_mcp_gateway_closes_every_session_on_it(stack, tmp_path):
    _sim, gateway = stack
    assert churn_through(gateway, tmp_path) == (CYCLES * BATCH, 0)  # (closed, left on the gateway)


def test_kit_cleanup_closes_the_sessions_a_run_left_on_litellms_mcp_gateway(stack, tmp_path):
    _sim, gateway = stack
    assert cleanup_through(gateway, tmp_path) == (AGENTS, 0)  # (left by the run, left after cleanup)
