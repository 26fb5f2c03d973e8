"""kit.cleanup's MCP closes go where the run spoke MCP: run.json's `target.mcp_url` (a ContextForge
server's `/servers/ID/mcp`, say), `--mcp-url` over it, `/mcp` for a run directory from before it was
recorded. Pure: the closer is built, nothing is sent."""

from __future__ import annotations

import json

import pytest

from contract import schema
from kit import cleanup


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
