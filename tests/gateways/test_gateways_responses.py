"""The Responses API agent reads the simulator's time to first token and its usage back, streamed and
not, and the chat agent sends the session-stickiness header a gateway preset names.

Truth: the simulator's --ttft-ms, --output-tokens and --prompt-tokens knobs.
"""

from __future__ import annotations

import pytest

from agents.gateways.model_call import session_headers
from agents.gateways.responses import ResponsesAgent
from agents.presets import preset
from contract import schema
from tests.gateways.harness import agent_user, rows

TTFT_MS = 200
KNOBS = ("--ttft-ms", str(TTFT_MS), "--itl-ms", "5", "--output-tokens", "8", "--prompt-tokens", "50")


@pytest.mark.timing
@pytest.mark.e2e
@pytest.mark.parametrize("stream", [True, False])
def test_responses_agent_reads_back_ttft_and_usage(simulator, tmp_path, stream):
    gateway = simulator(*KNOBS, "--usage-dialect", "responses")
    with agent_user(ResponsesAgent, gateway.url, tmp_path, responses_stream=stream) as user:
        for _ in range(3):
            user.respond()
    requests = rows(tmp_path, schema.REQUESTS_CSV)
    assert len(requests) == 3 and all(r["ok"] == "1" for r in requests), requests
    for row in requests:
        assert (row["tokens_in"], row["tokens_out"]) == ("50", "8"), row
        if stream:
            # 40 ms fixed: a TTFT taken at the stream's end (the bug it catches) reads the whole answer late
            assert abs(float(row["ttft_ms"]) - TTFT_MS) < 40, row
            assert row["chunks"] == "8"
        else:
            assert row["ttft_ms"] == "" and float(row["latency_ms"]) >= TTFT_MS


@pytest.mark.parametrize(
    ("gateway", "header"),
    [("hermes", "X-Hermes-Session-Id"), ("openclaw", "x-openclaw-session-key"), ("litellm", None)],
)
def test_session_stickiness_follows_the_gateways_convention(gateway, header):
    sent = session_headers(preset(gateway).session_header, "run-1-agent-7")
    assert sent == ({header: "run-1-agent-7"} if header else {})
