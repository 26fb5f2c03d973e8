"""kit.cleanup's MCP closes go where the run spoke MCP: run.json's `target.mcp_url` (a ContextForge
server's `/servers/ID/mcp`, say), `--mcp-url` over it, `/mcp` for a run directory from before it was
recorded (pure: the closer is built, nothing is sent); and the session an MCP run's liveness probe left
open when it was killed."""

from __future__ import annotations

import json
import signal

import httpx
import pytest

from contract import exit_codes, schema
from kit import cleanup
from simgateway import launch
from tests.fault_runs import KitProcess
from tests.locust_runs import wait_for


@pytest.mark.parametrize(
    ("recorded", "given", "path"),
    [
        ("/servers/7f2a/mcp", None, "/servers/7f2a/mcp"),
        ("/servers/7f2a/mcp", "/mcp", "/mcp"),
        (None, None, "/mcp"),
    ],
)
def test_kit_cleanup_closes_mcp_sessions_at_the_endpoint_the_run_spoke(tmp_path, recorded, given, path):
    target = {"gateway": "mcp", "url": "http://127.0.0.1:9"} | ({"mcp_url": recorded} if recorded else {})
    (tmp_path / schema.RUN_JSON).write_text(json.dumps({"run_id": "mcp-run", "target": target}))
    args = cleanup.parse_args([str(tmp_path), *(("--mcp-url", given) if given else ())])
    closer, client, recorder = cleanup.closer_for(tmp_path, cleanup.read_meta(tmp_path), args)
    recorder.close()
    assert client.path == path and closer.settings.mcp_url == path


@pytest.mark.e2e
def test_kit_cleanup_closes_the_mcp_probe_session_a_killed_run_left_open(tmp_path):
    """An MCP run SIGKILLed mid-run leaves its liveness probe's session open (the agents' are in
    agents.csv): run.json names it, and kit.cleanup closes it with the agents' on the server's own count."""
    with launch.running(["--mcp-preload", "--mcp-json-response"]) as gw:
        profile = ("--load-profile", "smoke", "--peak-users", "1", "--duration", "60s")
        kit = KitProcess.start(tmp_path / "run", "--gateway", "mcp", "--host", gw.url, *profile)
        try:
            wait_for(lambda: cleanup.MCP_PROBE_SESSION in meta_of(kit), 30, "the probe's session in run.json")
            kit.signal(signal.SIGKILL)
            kit.wait()
        finally:
            kit.kill()
        probe = f"loadkit-{meta_of(kit)['run_id']}-probe"
        assert mcp_stats(gw.url)["clients"][probe] >= 1 and mcp_stats(gw.url)["sessions"]["open"] >= 2
        assert cleanup.main([str(kit.run_dir)]) == exit_codes.OK
        assert mcp_stats(gw.url)["sessions"]["open"] == 0


def meta_of(kit: KitProcess) -> dict:
    try:
        return kit.meta()
    except (OSError, ValueError):  # not written yet, or being rewritten
        return {}


def mcp_stats(url: str) -> dict:
    return httpx.get(f"{url}/v1/sim/mcp", timeout=5).json()
