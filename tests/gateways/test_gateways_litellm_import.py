"""LiteLLM proxy 1.106.12's own logs imported as a session file: an `openai`-package user holds
two conversations through a real proxy whose model is the simulator, one named by `litellm_session_id`
(tools offered, streamed, a tool call answered), one by `user`; a callback (tests/gateways/
litellm_call_log.py) keeps each call's StandardLoggingPayload as LiteLLM makes it, and the SpendLogs row
LiteLLM's own `get_logging_payload` builds (the test proxy has no database to store it in). Both import
as the same sessions, each step the messages the user sent, the answer and usage the simulator gave,
and never the proxy's key; the import replays against the simulator step for step.

Truth: what the user sent and was answered, and the simulator's /v1/sim/calls (its token counts).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from openai import OpenAI

from agents.presets import preset
from contract.exit_codes import OK
from kit.capture import main
from scenarios.workloads.session_file import load_sessions
from simgateway import launch
from simgateway.client import request
from tests.capture.test_capture_replay import replay, smoke
from tests.gateways.harness import LITELLM_TESTS, free_port, running_server
from tests.paths import TEST_GATEWAYS

pytestmark = LITELLM_TESTS
MASTER_KEY = "sk-loadkit-test-key"
SIM = ["--ttft-ms", "20", "--itl-ms", "2", "--output-tokens", "6", "--tool-call-steps", "1"]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a city up.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
    }
]
CONFIG = """model_list:
  - model_name: sim-model
    litellm_params:
      model: openai/sim-model
      api_base: {url}/v1
      api_key: sk-sim-upstream-secret
litellm_settings:
  telemetry: false
  callbacks: litellm_call_log.call_log
general_settings:
  master_key: {key}
  store_prompts_in_spend_logs: true
"""


def converse(client: OpenAI, turns: list[str], sent: list[dict], **options) -> None:
    """One conversation of `turns` user messages, each turn's tool calls answered until a text answer;
    every call's messages and answer appended to `sent` in call order."""
    messages: list[dict] = [{"role": "system", "content": "You plan trips."}]
    for turn in turns:
        messages.append({"role": "user", "content": turn})
        while True:
            content, calls = ask(client, messages, options)
            sent.append({"messages": [dict(m) for m in messages], "content": content, "calls": calls})
            if not calls:
                messages.append({"role": "assistant", "content": content})
                break
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            messages += [{"role": "tool", "tool_call_id": c["id"], "content": "cold"} for c in calls]


def ask(client: OpenAI, messages: list[dict], options: dict) -> tuple[str, list[dict]]:
    if not options.get("stream"):
        message = client.chat.completions.create(model="sim-model", messages=messages, **options)
        reply = message.choices[0].message
        return reply.content or "", [c.model_dump(exclude_none=True) for c in reply.tool_calls or []]
    text, calls = [], {}
    for chunk in client.chat.completions.create(model="sim-model", messages=messages, **options):
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            for part in choice.delta.tool_calls or []:
                call = calls.setdefault(part.index, {"id": "", "type": "function", "function": {}})
                call["id"] = part.id or call["id"]
                function = call["function"]
                function["name"] = function.get("name") or part.function.name
                function["arguments"] = function.get("arguments", "") + (part.function.arguments or "")
    return "".join(text), [calls[i] for i in sorted(calls)]


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> Iterator[tuple[Path, Path, dict, list[dict]]]:
    """(StandardLoggingPayload lines, SpendLogs rows as a JSON array, the simulator's call log, what the
    user sent and was answered per session), the proxy and simulator stopped after."""
    folder = tmp_path_factory.mktemp("litellm-logs")
    log, spend_lines = folder / "standard.jsonl", folder / "spend.jsonl"
    os.environ |= {"LOADKIT_TEST_LITELLM_LOG": str(log), "LOADKIT_TEST_LITELLM_SPEND": str(spend_lines)}
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # never fetch the cost map from the internet
    env = {**os.environ, "PYTHONPATH": str(TEST_GATEWAYS)}
    with launch.running(SIM) as sim:
        config = folder / "config.yaml"
        config.write_text(CONFIG.format(url=sim.url, key=MASTER_KEY))
        port = free_port()
        command = [shutil.which("litellm") or "litellm", "--config", str(config), "--port", str(port)]
        command += ["--host", "127.0.0.1"]
        with running_server(command, preset("litellm").health_path, port, timeout_s=90, env=env) as url:
            client = OpenAI(base_url=f"{url}/v1", api_key=MASTER_KEY, max_retries=0)
            sent: dict[str, list[dict]] = {"trip-A": [], "bob": []}
            trip = {"tools": TOOLS, "stream": True, "stream_options": {"include_usage": True}}
            trip["extra_body"] = {"litellm_session_id": "trip-A"}
            converse(client, ["Plan a trip to Oslo", "And Bergen?"], sent["trip-A"], **trip)
            converse(client, ["Hello there", "Tell me more"], sent["bob"], user="bob")
            truth = request(sim.url, "GET", "/v1/sim/calls").json() | {"sim_url": sim.url}
    spend = folder / "spend.json"  # GET /spend/logs answers a JSON array of rows
    spend.write_text(json.dumps([json.loads(line) for line in spend_lines.read_text().splitlines()]))
    yield log, spend, truth, sent


@pytest.mark.parametrize("kind", ["standard", "spend"])
def test_litellms_logged_calls_import_as_the_sessions_the_user_held(logged, tmp_path, capsys, kind):
    log, spend, truth, sent = logged
    out = tmp_path / "imported.jsonl"
    assert main(["import-litellm", str(log if kind == "standard" else spend), "--out", str(out)]) == OK
    calls = sum(len(s) for s in sent.values())
    assert f"{calls} calls in 2 sessions" in capsys.readouterr().out
    text = out.read_text()
    assert MASTER_KEY not in text and "sk-sim-upstream-secret" not in text and "api_key" not in text
    recorded = load_sessions(str(out))
    assert recorded.upstream == "litellm://" + truth["sim_url"].split("://")[1]  # the deployment's api_base
    assert {s.name: len(s.steps) for s in recorded.sessions} == {n: len(s) for n, s in sent.items()}
    assert len(sent["trip-A"]) == 4 and len(sent["bob"]) == 2  # a tool call and an answer each turn
    by_seq = sorted(truth["calls"], key=lambda c: c["seq"])
    lines = [json.loads(line) for line in text.splitlines()[1:]]
    assert len(lines) == len(by_seq) == calls
    for line, at_model in zip(lines, by_seq, strict=True):  # the file in start order, the model's order
        step = sent[line["session"]][line["step"]]
        assert line["request"]["messages"] == step["messages"]
        response = line["response"]
        assert response["content"] == step["content"]
        assert [c["id"] for c in response["tool_calls"]] == [c["id"] for c in step["calls"]]
        assert [c["arguments"] for c in response["tool_calls"]] == [
            c["function"]["arguments"] for c in step["calls"]
        ]
        usage = response["usage"]
        assert (usage["prompt_tokens"], usage["completion_tokens"]) == (
            at_model["prompt_tokens"],
            at_model["completion_tokens"],
        )
        offered = [t["function"]["name"] for t in line["request"].get("tools", [])]
        assert offered == at_model["tools_offered"]
        assert (response["ttft_ms"] is not None) == (line["session"] == "trip-A")  # streamed
        if response["ttft_ms"] is not None:
            assert 0 < response["ttft_ms"] <= response["latency_ms"]
    first, second = (s.steps for s in recorded.sessions)
    assert first[0].think_s is None and all(s.think_s is not None and s.think_s >= 0 for s in first[1:])


def test_an_imported_litellm_log_replays_against_the_simulator_step_for_step(logged, tmp_path):
    log, _, _, sent = logged
    out = tmp_path / "imported.jsonl"
    assert main(["import-litellm", str(log), "--out", str(out)]) == OK
    run_dir, truth = replay(tmp_path, "replayed", out, smoke(2, "3s"), "--identical-copies")
    requests, tasks = pd.read_csv(run_dir / "requests.csv"), pd.read_csv(run_dir / "tasks.csv")
    assert (requests["ok"] == 1).all() and truth["totals"]["calls"] == len(requests), requests["error"]
    done = tasks[tasks["status"] == "done"]
    assert set(done["recorded_session"]) == set(sent), tasks[["recorded_session", "status"]]
    for _, task in done.iterrows():
        assert task["steps"] == task["recorded_steps"] == len(sent[task["recorded_session"]])
        steps = requests[requests["task_id"] == task["task_id"]]["step"]
        assert list(steps) == list(range(1, task["steps"] + 1))
    offered = {tuple(c["tools_offered"]) for c in truth["calls"] if c["first_user"] == "Plan a trip to Oslo"}
    assert offered == {("lookup",)}  # the tools LiteLLM logged, offered again
