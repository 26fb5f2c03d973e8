"""What the recorder keeps of a call, from the bytes that passed: streamed chat deltas reassembled (text,
tool calls, usage, the first token's time), Responses events, whole JSON bodies, and request bodies with
their secrets removed. Pure: no server."""

from __future__ import annotations

import json

from capture.exchange import Passed, answer_of, scrub, sse_events
from contract.redact import secret_values


def sse(*events: dict, done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return body + (b"data: [DONE]\n\n" if done else b"")


def passed(chunks: list[tuple[float, bytes]], content_type: str = "text/event-stream") -> Passed:
    kept = Passed(200, content_type)
    for at, chunk in chunks:
        kept.keep(at, chunk, 1 << 20)
    return kept


def test_a_streamed_chat_answer_is_its_text_tool_calls_usage_and_first_token_time():
    role = {"id": "c1", "choices": [{"delta": {"role": "assistant", "content": ""}}]}
    head = {"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "f"}}]}}]}
    args = [
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": a}}]}}]}
        for a in ('{"q"', ":1}")
    ]
    end = {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]}
    usage = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3}}
    stream = sse(role, head, *args, end, usage)
    cut = stream.index(b"data: ", 10)  # the role-only chunk alone first: not a token
    answer = answer_of("chat", passed([(0.010, stream[:cut]), (0.050, stream[cut:])]))
    assert answer["ttft_ms"] == 50.0 and answer["latency_ms"] == 50.0 and answer["id"] == "c1"
    assert answer["tool_calls"] == [{"id": "call_1", "name": "f", "arguments": '{"q":1}'}]
    assert (
        answer["usage"] == {"prompt_tokens": 7, "completion_tokens": 3}
        and answer["finish_reason"] == "tool_calls"
    )


def test_an_event_split_across_chunks_arrives_with_the_chunk_that_ends_it():
    body = b'data: {"a": 1}\n\n'
    events = sse_events([(0.1, body[:7]), (0.2, body[7:])])
    assert events == [(0.2, None, '{"a": 1}')]


def test_a_responses_stream_takes_its_answer_from_response_completed():
    delta = {"type": "response.output_text.delta", "delta": "hi"}
    final = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "hi"}]}],
            "usage": {"input_tokens": 5, "output_tokens": 1},
        },
    }
    answer = answer_of("responses", passed([(0.02, sse(delta, done=False)), (0.03, sse(final, done=False))]))
    assert (answer["ttft_ms"], answer["content"], answer["id"]) == (20.0, "hi", "resp_1")
    assert answer["usage"] == {"input_tokens": 5, "output_tokens": 1}


def test_a_whole_json_answer_and_an_error_are_kept_as_they_came():
    body = {
        "id": "c2",
        "choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 2},
    }
    answer = answer_of("chat", passed([(0.03, json.dumps(body).encode())], "application/json"))
    assert (answer["content"], answer["ttft_ms"], answer["usage"]) == ("ok", None, {"prompt_tokens": 2})
    refused = Passed(429, "application/json", [(0.001, b'{"error": "slow down"}')])
    assert answer_of("chat", refused)["error"] == '{"error": "slow down"}'


def test_secrets_never_reach_the_recorded_body():
    key = "sk-live-0123456789abcdef"
    body = {"model": "m", "api_key": key, "messages": [{"role": "user", "content": f"my key is {key}"}]}
    kept = scrub(body, (key,))
    assert kept["api_key"] == "***" and key not in json.dumps(kept) and "my key is ***" in json.dumps(kept)
    assert scrub({"model": "m"}, (key,)) == {"model": "m"}  # nothing to remove: the body as sent


def test_a_canary_at_any_depth_of_a_body_or_an_answer_is_masked_and_a_schema_keeps_its_shape():
    canary = "sk-canary-9f8e7d6c5b4a"
    body = {
        "model": "m",
        "metadata": {"api_key": canary, "openai_api_key": canary, "password": canary, "n": 1},
        "extra_headers": {"Authorization": f"Bearer {canary}-hdr"},
        "messages": [{"role": "user", "content": f"see {canary}-hdr and http://u:{canary}@h/"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "f", "parameters": {"properties": {"token": {"type": "string"}}}},
            }
        ],
    }
    secrets = secret_values(body)
    kept = scrub(body, tuple(secrets))
    assert canary not in json.dumps(kept) and kept["metadata"]["n"] == 1
    assert kept["tools"] == body["tools"]  # a parameter named `token` is a schema, not a secret
    denied = Passed(401, "application/json", [(0.001, json.dumps({"error": {"api_key": canary}}).encode())])
    assert canary not in json.dumps(scrub(answer_of("chat", denied), ()))  # an error body's own keys


def test_a_canary_in_a_tool_calls_arguments_text_is_masked_and_other_arguments_stay_byte_for_byte():
    canary = "sk-canary-ARGS-0a1b2c3d4e"
    secret = json.dumps({"city": "Oslo", "auth": {"api_key": canary}})
    plain = '{"city":"Oslo",  "max_tokens": 3}'  # spacing and order a replay sends back as recorded
    asked = [
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": a}} for a in (secret, plain)
    ]
    body = {
        "model": "m",
        "messages": [
            {"role": "assistant", "tool_calls": asked},
            {"role": "tool", "tool_call_id": "c1", "content": f"used {canary}"},  # recurs: masked too
        ],
    }
    kept = scrub(body, tuple(secret_values(body)))
    masked, same = (c["function"]["arguments"] for c in kept["messages"][0]["tool_calls"])
    assert canary not in json.dumps(kept) and json.loads(masked) == {
        "city": "Oslo",
        "auth": {"api_key": "***"},
    }
    assert same == plain and scrub({"arguments": "{not json"}, ()) == {"arguments": "{not json"}
    whole = {"choices": [{"message": {"tool_calls": asked}, "finish_reason": "tool_calls"}]}
    head = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": secret[:20]}}
    fragments = [[head], [{"index": 0, "function": {"arguments": secret[20:]}}]]  # the key split in two
    streamed = sse(*({"choices": [{"delta": {"tool_calls": f}}]} for f in fragments))
    for answer in (
        answer_of("chat", passed([(0.1, json.dumps(whole).encode())], "application/json")),
        answer_of("chat", passed([(0.1, streamed)])),
        answer_of(
            "responses",
            passed(
                [(0.1, json.dumps({"output": [{"type": "function_call", "arguments": secret}]}).encode())],
                "application/json",
            ),
        ),
    ):
        first = scrub(answer, ())["tool_calls"][0]["arguments"]
        assert isinstance(first, str) and json.loads(first)["auth"] == {"api_key": "***"}
