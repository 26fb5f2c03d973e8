"""LiteLLM proxy 1.106.12 with the simulator's scripted model as its upstream (docs/gateways.md's recipe):
streamed tool calls pass through whole (reassembled = what the simulator sent), and so do the model's usage
and a cost LiteLLM computes from the deployment's prices; the chat agent's loop through it takes the
scripted steps, its context grows as the simulator counts it, and a task costs the sum of its steps.

Truth: GET /v1/sim/calls (the calls and arguments the model sent, its prompt count).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest

from agents.gateways.openai_chat import ChatAgent
from agents.loop.tool_deltas import ToolCall, ToolCallAssembler, chat_token_kind
from agents.presets import preset
from agents.wire.sse import iter_sse
from analysis.headline import headline
from analysis.load import load_run
from analysis.summary import console_summary
from scenarios.workloads.settings import read_workload
from simgateway import launch
from simgateway.client import request
from tests.gateways.harness import LITELLM_TESTS, agent_user, free_port, rows, running_server

pytestmark = LITELLM_TESTS
MASTER_KEY = "sk-loadkit-test-key"
KEY_ENV = "LOADKIT_TEST_LITELLM_KEY"
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
    os.environ[KEY_ENV] = MASTER_KEY
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


def test_the_chat_agents_loop_through_litellm_takes_the_scripted_steps(stack, tmp_path):
    url, sim_url = stack
    path = tmp_path / "w.toml"
    path.write_text("[tools]\ncount = 2\nresult = 40\n\n[loop]\nmax_steps = 6\n")
    workload = read_workload(SimpleNamespace(workload_file=str(path)))
    options = {"model": "sim-model", "api_key_env": KEY_ENV, "workload": workload}
    with agent_user(ChatAgent, url, tmp_path / "run", **options) as user:
        for _ in range(2):
            user.chat_stream()
    tasks = rows(tmp_path / "run", "tasks.csv")
    assert [(t["end_reason"], t["steps"], t["tool_calls"]) for t in tasks] == [("answer", "4", "6")] * 2
    requests = rows(tmp_path / "run", "requests.csv")
    truth = {c["id"]: c for c in request(sim_url, "GET", "/v1/sim/calls").json()["calls"]}
    for task in tasks:
        steps = [r for r in requests if r["task_id"] == task["task_id"]]
        assert [r["tool_calls"] for r in steps] == ["2", "2", "2", "0"]
        assert [r["first_token_kind"] for r in steps] == ["tool_call"] * 3 + ["content"]
        prompts = [truth[r["request_id"]]["prompt_tokens"] for r in steps]
        assert [int(r["tokens_in"]) for r in steps] == prompts and prompts == sorted(set(prompts))
        costs = [float(r["gateway_cost_usd"]) for r in steps]
        assert float(task["gateway_cost_usd"]) == pytest.approx(sum(costs), rel=1e-9)
        expected = sum(
            (int(r["tokens_in"]) * PRICE_IN + int(r["tokens_out"]) * PRICE_OUT) / 1e6 for r in steps
        )
        assert sum(costs) == pytest.approx(expected, rel=1e-6)
    billed = sum(float(r["gateway_cost_usd"]) for r in requests)
    run = load_run(tmp_path / "run")
    figures = {f.label: f for f in headline(run).figures}
    assert figures["LLM cost as billed"].value == pytest.approx(billed, rel=1e-9)  # LiteLLM's own, not $1/$2
    assert "FICTIONAL" in figures["LLM cost at list price"].text()  # the table's sim-model is made up
    (line,) = [x for x in console_summary(run).splitlines() if x.startswith("LLM cost")]
    assert line.startswith(f"LLM cost: ${billed:,.6f} over 8 calls, every call as the gateway reported it"), (
        line
    )
