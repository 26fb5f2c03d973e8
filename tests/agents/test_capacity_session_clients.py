"""The capacity/churn session clients the presets choose: which can close a session, and a LangGraph run
that finds no assistant, refused before any session is opened (the simulator lists no assistant)."""

from __future__ import annotations

import pandas as pd
import pytest

from agents import presets
from agents.capacity.idle_sessions import AcpSessions
from contract import exit_codes, schema
from tests.locust_runs import run_locust


def test_every_http_preset_with_sessions_names_a_client_that_can_close_them():
    """OpenClaw's steps have no HTTP close: its client closes over the RPC, so churn can run."""
    for name, chosen in presets.PRESETS.items():
        if chosen.sessions is None or isinstance(chosen.sessions, AcpSessions):
            continue
        client = presets.session_client(chosen)
        assert client.can_close(chosen.sessions), name
    assert presets.session_steps.OPENCLAW.close is None
    assert presets.session_client(presets.preset("openclaw")).__name__ == "OpenClawSessionClient"


@pytest.mark.e2e
def test_langgraph_capacity_without_an_assistant_is_one_line_and_sends_no_placeholder(simulator, tmp_path):
    gateway = simulator()
    run = tmp_path / "run"
    args = ["--gateway", "langgraph", "--host", gateway.url, "--target-pid", str(gateway.pid)]
    done = run_locust(run, *args, "--load-profile", "capacity", "--max-agents", "2")
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr[-2000:]
    said = [line for line in done.stderr.splitlines() if "found no LangGraph assistant" in line]
    assert said and "/assistants/search" in said[0] and "--assistant-id" in said[0]
    assert "Traceback" not in done.stderr
    sent = pd.read_csv(run / schema.REQUESTS_CSV)["operation"]
    assert list(sent) == ["assistant.search"]  # no thread, no run with a made-up assistant id
