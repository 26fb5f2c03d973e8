"""Hermes Agent's API server (hermes-agent 0.19 from PyPI, in its own virtualenv) pointed at the
simulator's mock LLM on loopback: runs reach completion by their SSE events and by polling, usage is read
in both (run.completed, the polled run), run times are the server's own timestamps, chat completions
carry the bearer key and the X-Hermes-Session-Id header, and sticky sessions drift where fresh ones do not.

Truth: the simulator's --output-tokens (tokens out per LLM call) and --ttft-ms (a lower bound on TTFT).
Skipped unless a `hermes` executable is found (LOADKIT_HERMES_BIN, or on PATH).
"""

from __future__ import annotations

import httpx
import pytest

from agents.gateways.hermes_runs import HermesRunsAgent
from agents.gateways.openai_chat import ChatAgent
from analysis.drift import drift_section
from analysis.load import load_run
from contract import schema
from tests.gateways.harness import HERMES_KEY as KEY
from tests.gateways.harness import NEEDS_HERMES, agent_user, hermes_gateway, rows

pytestmark = NEEDS_HERMES
OUTPUT_TOKENS = 8
TURNS = 4
TTFT_MS = 50


@pytest.fixture
def hermes_url(simulator, tmp_path, monkeypatch):
    gateway = simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", "5", "--output-tokens", str(OUTPUT_TOKENS))
    with hermes_gateway(gateway.url, tmp_path / "hermes-home", monkeypatch) as (url, _pid):
        yield url


@pytest.mark.timing
@pytest.mark.parametrize("follow", ["events", "poll"])
def test_hermes_runs_complete_with_usage_and_the_servers_times(hermes_url, tmp_path, follow):
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "runs_follow": follow, "poll_interval": 0.3}
    with agent_user(HermesRunsAgent, hermes_url, tmp_path, task_timeout=30.0, **options) as user:
        for _ in range(2):
            user.run_and_follow()
    tasks = rows(tmp_path, schema.TASKS_CSV)
    assert [t["status"] for t in tasks] == ["done", "done"], tasks
    assert all(t["tokens_out"] == str(OUTPUT_TOKENS) and int(t["tokens_in"]) > 0 for t in tasks), tasks
    assert all(t["times_from"] == "gateway" for t in tasks), tasks
    for task in tasks:
        created, updated = server_times(hermes_url, task["task_id"])
        assert abs(float(task["finished_ts"]) - updated) < 0.05, (task, updated)
        if follow == "poll":  # the server's own span, the polled one (late by up to 300 ms) beside it
            # 50 ms fixed, against the server's own span: the client's polled span is up to 300 ms off
            assert abs(float(task["run_ms"]) - (updated - created) * 1000) < 50, task
            assert float(task["poll_interval_ms"]) == 300 and task["polled_run_ms"] != "", task
    if follow == "events":
        streams = [r for r in rows(tmp_path, schema.REQUESTS_CSV) if r["operation"] == "run.events"]
        assert all(r["ok"] == "1" and float(r["ttft_ms"]) >= TTFT_MS for r in streams), streams


def server_times(url: str, run_id: str) -> tuple[float, float]:
    """created_at and updated_at of a finished run, read by an independent client."""
    body = httpx.get(f"{url}/v1/runs/{run_id}", headers={"Authorization": f"Bearer {KEY}"}).json()
    return float(body["created_at"]), float(body["updated_at"])


def test_hermes_chat_with_session_header_and_bearer_key(hermes_url, tmp_path):
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "session_header": "X-Hermes-Session-Id"}
    with agent_user(ChatAgent, hermes_url, tmp_path, model="hermes-agent", **options) as user:
        user.chat_stream()
    (row,) = rows(tmp_path, schema.REQUESTS_CSV)
    assert row["ok"] == "1" and float(row["ttft_ms"]) >= TTFT_MS, row


def test_sticky_sessions_drift_and_fresh_sessions_do_not(hermes_url, tmp_path):
    """Hermes resends a sticky session's history each turn: tokens_in grows; a fresh session per turn
    keeps it at the first turn's figure. The report's drift section reads the growth back."""
    options = {"api_key_env": "LOADKIT_TEST_HERMES_KEY", "session_header": "X-Hermes-Session-Id"}
    tokens = {}
    for policy in ("sticky", "fresh"):
        run_dir = tmp_path / policy
        with agent_user(
            ChatAgent, hermes_url, run_dir, model="hermes-agent", session_policy=policy, **options
        ) as user:
            for _ in range(TURNS):
                user.chat_stream()
        requests = rows(run_dir, schema.REQUESTS_CSV)
        assert all(r["ok"] == "1" for r in requests), requests
        tokens[policy] = [int(r["tokens_in"]) for r in requests]
        assert len({r["session_id"] for r in requests}) == (1 if policy == "sticky" else TURNS)
    sticky, fresh = tokens["sticky"], tokens["fresh"]
    assert all(later > earlier for earlier, later in zip(sticky, sticky[1:], strict=False)), sticky
    assert max(fresh) - min(fresh) <= 2 and abs(fresh[0] - sticky[0]) <= 2, tokens
    (note,) = drift_section(load_run(tmp_path / "sticky")).notes
    assert "grows" in note and "--session-policy" in note, note


def test_hermes_refuses_a_request_without_the_key(hermes_url, tmp_path):
    with agent_user(HermesRunsAgent, hermes_url, tmp_path, task_timeout=5.0) as user:
        user.run_and_follow()
    (row,) = rows(tmp_path, schema.REQUESTS_CSV)
    assert row["operation"] == "run.create" and row["error_kind"] == "http_4xx", row
