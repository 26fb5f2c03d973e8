"""LiteLLM proxy 1.106.12 with the simulator's scripted model as its upstream (docs/gateways.md's recipe):
streamed tool calls pass through whole (reassembled = what the simulator sent), and so do the model's usage
and a cost LiteLLM computes from the deployment's prices.

Truth: GET /v1/sim/calls (the calls and arguments the model sent, its prompt count).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator

import httpx
import pytest

from agents.presets import preset
from agents.sse import iter_sse
from agents.tool_deltas import ToolCall, ToolCallAssembler, chat_token_kind
from simgateway import launch
from simgateway.client import request
from tests.gateways.harness import free_port, installed, running_server

pytestmark = [
    pytest.mark.gateways,
    pytest.mark.e2e,
    pytest.mark.skipif(
        not installed("litellm"), reason="litellm[proxy] not installed (requirements-gateways.txt)"
    ),
]
MASTER_KEY = "sk-loadkit-test-key"
PRICE_IN, PRICE_OUT = 0.14, 0.28  # $ per M tokens, the rounds study's list prices
MODEL_KNOBS = ["--ttft-ms", "5", "--itl-ms", "1", "--output-tokens", "4", "--tool-call-steps", "3"]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]


def litellm_config(model_url: str) -> str:
    """The recipe: one deployment whose upstream is the simulator, priced per token."""
    return f"""model_list:
  - model_name: sim-model
    litellm_params:
      model: openai/sim-model
      api_base: {model_url}/v1
      api_key: sk-sim
      input_cost_per_token: {PRICE_IN / 1e6}
      output_cost_per_token: {PRICE_OUT / 1e6}
litellm_settings:
  telemetry: false
general_settings:
  master_key: {MASTER_KEY}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """(litellm url, simulator url), both stopped after the module."""
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # never fetch the cost map from the internet
    with launch.running([*MODEL_KNOBS, "--tool-calls-per-step", "2"]) as sim:
        config = tmp_path_factory.mktemp("litellm") / "config.yaml"
        config.write_text(litellm_config(sim.url))
        port = free_port()
        litellm = shutil.which("litellm") or "litellm"
        command = [litellm, "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
        with running_server(command, preset("litellm").health_path, port, timeout_s=90) as url:
            yield url, sim.url


def test_streamed_parallel_tool_calls_pass_through_litellm_whole(stack):
    url, sim_url = stack
    body = {
        "model": "sim-model",
        "messages": [{"role": "user", "content": "look it up"}],
        "tools": TOOLS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assembler, kinds, usage = ToolCallAssembler(), [], None
    headers = {"Authorization": f"Bearer {MASTER_KEY}"}
    with httpx.stream(
        "POST", f"{url}/v1/chat/completions", json=body, headers=headers, timeout=60
    ) as response:
        assert response.status_code == 200, response.read()
        for event in iter_sse(response.iter_lines()):
            if event.data.strip() == "[DONE]":
                break
            chunk = json.loads(event.data)
            kinds.append(chat_token_kind(chunk, assembler))
            usage = chunk.get("usage") or usage
    sent = request(sim_url, "GET", "/v1/sim/calls").json()["calls"][-1]
    truth = [ToolCall(c["id"], c["name"], c["arguments"]) for c in sent["tool_calls"]]
    assert assembler.calls() == truth and len(truth) == 2
    assert "content" not in kinds and kinds.count("tool_call") > len(truth)
    assert usage is not None and usage["prompt_tokens"] == sent["prompt_tokens"], usage
    expected_cost = (usage["prompt_tokens"] * PRICE_IN + usage["completion_tokens"] * PRICE_OUT) / 1e6
    assert usage["cost"] == pytest.approx(expected_cost, rel=1e-6), usage
