"""The scripted model over real HTTP: tool calls streamed as OpenAI streams them (chat deltas and Responses
events), non-streamed shapes, the prompt count with schemas and history, and GET /v1/sim/calls' truths."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from contract.child_env import kit_module_env
from simgateway import launch
from simgateway.calls import conversation_key
from simgateway.client import request, stream_lines

pytestmark = pytest.mark.e2e
PARAMS = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}
TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": PARAMS}}]
FAST = ["--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "3"]


def chunks(url: str, body: dict) -> list[dict]:
    lines = stream_lines(url, "/v1/chat/completions", {**body, "stream": True})
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def test_a_tool_call_streams_header_then_argument_fragments_then_finish_tool_calls():
    with launch.running([*FAST, "--tool-call-steps", "1", "--tool-arg-fragment-chars", "5"]) as gw:
        body = {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
        events = chunks(gw.url, {**body, "stream_options": {"include_usage": True}})
        truth = request(gw.url, "GET", "/v1/sim/calls").json()
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    assert deltas[0] == {"role": "assistant", "content": None}
    (head,) = deltas[1]["tool_calls"]
    (sent,) = truth["calls"][0]["tool_calls"]
    assert head == {
        "index": 0,
        "id": sent["id"],
        "type": "function",
        "function": {"name": "weather", "arguments": ""},
    }
    pieces = [d["tool_calls"][0] for d in deltas[2:] if d]
    assert all(set(p) == {"index", "function"} and len(p["function"]["arguments"]) <= 5 for p in pieces)
    assert "".join(p["function"]["arguments"] for p in pieces) == sent["arguments"]
    assert json.loads(sent["arguments"]) == {"city": "lorem", "days": 2}
    finish = [e["choices"][0]["finish_reason"] for e in events if e["choices"]][-1]
    assert finish == "tool_calls" and events[-1]["usage"]["completion_tokens"] == 1 + len(pieces)


def test_steps_then_text_and_the_prompt_count_grows_by_what_was_appended():
    """Three tool-call steps, then an answer; each step's prompt is ceil(chars / 4) over the messages,
    the calls, the results and the schemas, as the simulator's own log says."""
    with launch.running([*FAST, "--tool-call-steps", "3"]) as gw:
        messages: list[dict] = [{"role": "user", "content": "plan a trip, step by step"}]
        finishes, prompts = [], []
        for _ in range(5):
            reply = request(
                gw.url, "POST", "/v1/chat/completions", {"messages": messages, "tools": TOOLS}
            ).json()
            choice = reply["choices"][0]
            finishes.append(choice["finish_reason"])
            prompts.append(reply["usage"]["prompt_tokens"])
            messages.append(choice["message"])
            if choice["finish_reason"] != "tool_calls":
                break
            messages += [
                {"role": "tool", "tool_call_id": c["id"], "content": "sunny " * 20}
                for c in choice["message"]["tool_calls"]
            ]
        truth = request(gw.url, "GET", "/v1/sim/calls").json()
    assert finishes == ["tool_calls"] * 3 + ["stop"]
    chars = len(messages[0]["content"]) + len(json.dumps(TOOLS, separators=(",", ":")))
    expected = []
    for step in range(4):
        expected.append(math.ceil(chars / 4))
        if step < 3:
            call = messages[1 + 2 * step]["tool_calls"][0]["function"]
            chars += len(call["name"]) + len(call["arguments"]) + len("sunny " * 20)
    assert prompts == expected and all(b > a for a, b in zip(prompts, prompts[1:], strict=False))
    (conversation,) = truth["conversations"]
    assert conversation == {
        "key": conversation_key(messages[0]["content"]),
        "first_user": messages[0]["content"],
        "calls": 4,
        "tool_calls": 3,
    }
    assert [c["step"] for c in truth["calls"]] == [1, 2, 3, 4] and truth["totals"]["tool_calls"] == 3


def test_responses_streams_function_call_events_and_completes_with_function_call_items():
    tools = [{"type": "function", "name": "weather", "parameters": PARAMS}]
    with launch.running([*FAST, "--tool-call-steps", "1", "--tool-calls-per-step", "2"]) as gw:
        body = {"input": "hi", "tools": tools, "stream": True}
        lines = list(stream_lines(gw.url, "/v1/responses", body))
        plain = request(gw.url, "POST", "/v1/responses", {"input": "hi", "tools": tools}).json()
    events = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    kinds = [e["type"] for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.output_item.added") == 2 and kinds.count("response.output_item.done") == 2
    output = events[-1]["response"]["output"]
    for call in output:
        deltas = [e["delta"] for e in events if e.get("item_id") == call["id"] and "delta" in e]
        assert "".join(deltas) == call["arguments"] and call["type"] == "function_call"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [c["name"] for c in plain["output"]] == ["weather", "weather"] and plain["status"] == "completed"


def test_without_tool_call_steps_a_request_with_tools_gets_text():
    with launch.running(FAST) as gw:
        reply = request(
            gw.url,
            "POST",
            "/v1/chat/completions",
            {"messages": [{"role": "user", "content": "hi"}], "tools": TOOLS},
        ).json()
    assert reply["choices"][0]["message"]["content"] == "lorem ipsum dolor"
    assert reply["choices"][0]["finish_reason"] == "stop"


def test_a_bad_script_file_stops_the_simulator_with_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[rule]]\ncall = 'x'\n")
    command = [sys.executable, "-m", "simgateway", "--port", "0", "--script", str(bad)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30, env=kit_module_env())
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"{bad}: rule 1: 'offers' must name a tool" in done.stderr
