"""The real OpenClaw gateway (npm `openclaw`, installed by tests/gateways/install_openclaw.sh) started offline
on loopback with the simulator as its only model provider, in a throwaway state directory.

Found through LOADKIT_OPENCLAW_BIN, else the repo's .openclaw/bin/openclaw; tests skip with a reason when
neither exists. Nothing here asserts; the caller's fixture stops what it starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from lifecycle.target import Target, free_port, start_target, stop_target

REPO = Path(__file__).resolve().parents[2]
LOCAL_BIN = REPO / ".openclaw" / "bin" / "openclaw"
OPENCLAW = os.environ.get("LOADKIT_OPENCLAW_BIN") or (str(LOCAL_BIN) if LOCAL_BIN.exists() else None)
NEEDS_OPENCLAW = [
    pytest.mark.gateways,
    pytest.mark.skipif(
        not OPENCLAW,
        reason="no openclaw (run tests/gateways/install_openclaw.sh or set LOADKIT_OPENCLAW_BIN)",
    ),
]
TOKEN_ENV = "LOADKIT_TEST_OPENCLAW_TOKEN"
TOKEN = "loadkit-openclaw-test-token"  # a throwaway gateway's token, in its environment only
START_TIMEOUT_S = 120.0  # ~15 s idle; the shared 2-core machine is often busier
FIRST_TURN_TIMEOUT_S = 180.0  # the first agent turn builds the system prompt and tool catalog (10-30 s)


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
        target = start_target(command, f"http://127.0.0.1:{port}", "/health", START_TIMEOUT_S)
        try:
            warm_up(target.url)
            yield target
        finally:
            stop_target(target, timeout_s=10.0)


def warm_up(url: str) -> None:
    body = {"model": "openclaw", "messages": [{"role": "user", "content": "warm up"}], "user": "warm-up"}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    httpx.post(f"{url}/v1/chat/completions", json=body, headers=headers, timeout=FIRST_TURN_TIMEOUT_S)
