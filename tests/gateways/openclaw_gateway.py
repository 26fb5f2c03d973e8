"""The real OpenClaw gateway (npm `openclaw`, installed by tests/gateways/install_openclaw.sh) started offline
on loopback with the simulator as its only model provider, in a throwaway state directory.

Found through LOADKIT_OPENCLAW_BIN, else the repo's .openclaw/bin/openclaw; tests skip with a reason when
neither exists. Nothing here asserts; the caller's fixture stops what it starts.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from agents.presets import preset
from lifecycle.target import Target, free_port, start_target, stop_target

REPO = Path(__file__).resolve().parents[2]
LOCAL_BIN = REPO / ".openclaw" / "bin" / "openclaw"
_CANDIDATE = os.environ.get("LOADKIT_OPENCLAW_BIN") or str(LOCAL_BIN)
OPENCLAW = shutil.which(_CANDIDATE)  # None when the install was skipped or failed
NEEDS_OPENCLAW = [
    pytest.mark.gateways,
    pytest.mark.e2e,
    pytest.mark.skipif(
        not OPENCLAW,
        reason="no openclaw (run tests/gateways/install_openclaw.sh or set LOADKIT_OPENCLAW_BIN)",
    ),
]
TOKEN_ENV = "LOADKIT_TEST_OPENCLAW_TOKEN"
TOKEN = "loadkit-openclaw-test-token"  # a throwaway gateway's token, in its environment only
# Measured here: ready in ~15 s and a first turn of 10-30 s on a quiet machine, but 140 s and over 3 min
# at load average 15 on the 2 shared cores; CI machines are quieter.
START_TIMEOUT_S = 400.0
FIRST_TURN_TIMEOUT_S = 600.0


def config(model_url: str) -> dict:
    """Chat and Responses endpoints on; the simulator as the only provider and the default agent's model."""
    model = {
        "id": "sim-model",
        "name": "simulator",
        "reasoning": False,
        "input": ["text"],
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        "contextWindow": 128000,
        "maxTokens": 4096,
    }
    provider = {
        "baseUrl": f"{model_url}/v1",
        "apiKey": "sk-sim",
        "api": "openai-completions",
        "models": [model],
    }
    endpoints = {"chatCompletions": {"enabled": True}, "responses": {"enabled": True}}
    return {
        "gateway": {"mode": "local", "http": {"endpoints": endpoints}},
        "models": {"mode": "replace", "providers": {"sim": provider}},
        "agents": {"defaults": {"model": {"primary": "sim/sim-model"}}},
        # Tool Search (on by default) hides a request's client tools behind tool_search/tool_call; off,
        # the model is offered them by name, so the kit's agent loop can run through the gateway
        "tools": {"toolSearch": False},
    }


def environment(state_dir: Path, model_url: str) -> dict[str, str]:
    state_dir.mkdir(parents=True, exist_ok=True)
    config_path = state_dir / "openclaw.json"
    config_path.write_text(json.dumps(config(model_url), indent=2))
    return {
        "OPENCLAW_STATE_DIR": str(state_dir),
        "OPENCLAW_CONFIG_PATH": str(config_path),
        "OPENCLAW_GATEWAY_TOKEN": TOKEN,
        TOKEN_ENV: TOKEN,
    }


@contextmanager
def running_openclaw(state_dir: Path, model_url: str) -> Iterator[Target]:
    """A healthy OpenClaw gateway whose first (slow) agent turn is already done; always stopped after."""
    port = free_port()
    command = [OPENCLAW, "gateway", "--bind", "loopback", "--auth", "token", "--port", str(port)]
    with pytest.MonkeyPatch.context() as patch:
        for name, value in environment(state_dir, model_url).items():
            patch.setenv(name, value)
        target = start_target(
            command, f"http://127.0.0.1:{port}", preset("openclaw").health_path, START_TIMEOUT_S
        )
        try:
            warm_up(target.url)
            yield target
        finally:
            stop_target(target, timeout_s=10.0)


def warm_up(url: str) -> None:
    body = {"model": "openclaw", "messages": [{"role": "user", "content": "warm up"}], "user": "warm-up"}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=FIRST_TURN_TIMEOUT_S)
