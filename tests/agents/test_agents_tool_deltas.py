"""Streamed tool calls reassembled: parallel calls whose arguments arrive one character per chunk from the
real simulator (chat and Responses), reassembled exactly as the simulator's log says it sent them, and the
gateway quirks (no index, repeated names, interleaved calls) in pure form."""

from __future__ import annotations

import json

import pytest

from agents.loop.tool_deltas import ToolCall, ToolCallAssembler, chat_token_kind
from agents.wire.sse import iter_sse
from simgateway import launch
from simgateway.client import request, stream_lines

PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "note": {"type": "string"}, "n": {"type": "integer"}},
}


@pytest.mark.e2e
@pytest.mark.parametrize("api", ["chat", "responses"])
def test_parallel_calls_split_at_every_character_are_reassembled_exactly(api):
    knobs = ["--ttft-ms", "0", "--itl-ms", "0", "--tool-call-steps", "1", "--tool-calls-per-step", "4"]
    with launch.running([*knobs, "--tool-arg-fragment-chars", "1"]) as gw:
        calls, pieces = read_calls(gw.url, api)
        (sent,) = request(gw.url, "GET", "/v1/sim/calls").json()["calls"]
    truth = [ToolCall(c["id"], c["name"], c["arguments"]) for c in sent["tool_calls"]]
    assert calls == truth and len(truth) == 4
    assert pieces == sum(len(c.arguments) + 1 for c in truth), "one chunk per character, plus each header"
    assert any(not c.arguments.isascii() for c in truth) and any('\\"' in c.arguments for c in truth)
    assert all(c.parsed() is not None for c in calls)


def read_calls(url: str, api: str) -> tuple[list[ToolCall], int]:
    """Stream one step and feed every chunk to the assembler; (calls, chunks that carried a call token)."""
    assembler, pieces = ToolCallAssembler(), 0
    if api == "chat":
        tools = [{"type": "function", "function": {"name": "weather", "parameters": PARAMS}}]
        body = {"messages": [{"role": "user", "content": "go"}], "tools": tools, "stream": True}
        for event in iter_sse(stream_lines(url, "/v1/chat/completions", body)):
            if event.data != "[DONE]":
                pieces += chat_token_kind(json.loads(event.data), assembler) == "tool_call"
    else:
        tools = [{"type": "function", "name": "weather", "parameters": PARAMS}]
        body = {"input": "go", "tools": tools, "stream": True}
        for event in iter_sse(stream_lines(url, "/v1/responses", body)):
            pieces += assembler.add_response_event(event.event, json.loads(event.data))
    return assembler.calls(), pieces


def test_deltas_without_index_follow_the_call_id():
    a = ToolCallAssembler()
    a.add_chat([{"id": "x", "type": "function", "function": {"name": "f", "arguments": '{"a"'}}])
    a.add_chat([{"function": {"arguments": ": 1}"}}])
    a.add_chat([{"id": "y", "function": {"name": "g", "arguments": "{}"}}])
    a.add_chat([{"id": "y", "function": {"name": "g", "arguments": ""}}])  # a gateway repeating id and name
    assert a.calls() == [ToolCall("x", "f", '{"a": 1}'), ToolCall("y", "g", "{}")]


def test_interleaved_indexes_are_returned_in_the_models_order():
    a = ToolCallAssembler()
    a.add_chat([{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{"}}])
    a.add_chat([{"index": 0, "id": "a", "function": {"name": "f", "arguments": "["}}])
    a.add_chat([{"index": 1, "function": {"arguments": "}"}}, {"index": 0, "function": {"arguments": "]"}}])
    assert a.calls() == [ToolCall("a", "f", "[]"), ToolCall("b", "g", "{}")]
    assert a.calls()[0].parsed() is None, "arguments that are not a JSON object"


def test_a_content_chunk_and_a_role_chunk_are_told_apart():
    a = ToolCallAssembler()
    assert chat_token_kind({"choices": [{"delta": {"role": "assistant", "content": ""}}]}, a) is None
    assert chat_token_kind({"choices": [{"delta": {"content": "hi"}}]}, a) == "content"
    assert chat_token_kind({"choices": [], "usage": {}}, a) is None and not a


def test_a_responses_call_sent_whole_in_its_item_keeps_its_arguments():
    """OpenClaw 2026.9 sends a function call whole in `response.output_item.added` (and again at
    `.done`), no argument fragments: the call keeps its arguments, once."""
    item = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "lookup", "arguments": '{"q":1}'}
    calls = ToolCallAssembler()
    assert calls.add_response_event("response.output_item.added", {"item": item})
    calls.add_response_event("response.output_item.done", {"item": {**item, "status": "completed"}})
    assert calls.calls() == [ToolCall("c1", "lookup", '{"q":1}')]
