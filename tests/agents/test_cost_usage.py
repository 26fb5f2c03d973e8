"""Usage parsing: one real-shaped payload per dialect (streamed and not), cached tokens included."""

from __future__ import annotations

from agents.wire.usage import Usage, parse_stream_usage, parse_usage, sum_usage
from contract.schema import REQUEST_COLUMNS


def test_openai_chat_reads_prompt_completion_cached_and_reasoning():
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": 2006,
            "completion_tokens": 300,
            "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 64, "audio_tokens": 0},
        },
    }
    assert parse_usage(body) == Usage(2006, 1920, None, 300, 64, "gpt-4o-mini-2024-07-18", None)


def test_openai_chat_stream_takes_usage_from_the_final_include_usage_chunk():
    chunks = [
        {
            "object": "chat.completion.chunk",
            "model": "gpt-4o-mini",
            "choices": [{"delta": {"content": "a"}}],
            "usage": None,
        },
        {
            "object": "chat.completion.chunk",
            "model": "gpt-4o-mini",
            "choices": [{"delta": {"content": "b"}}],
            "usage": None,
        },
        {
            "object": "chat.completion.chunk",
            "model": "gpt-4o-mini",
            "choices": [],
            "usage": {
                "prompt_tokens": 1200,
                "completion_tokens": 40,
                "total_tokens": 1240,
                "prompt_tokens_details": {"cached_tokens": 1024},
            },
        },
    ]
    usage = parse_stream_usage(chunks)
    assert (usage.tokens_in, usage.tokens_cached, usage.tokens_out, usage.model) == (
        1200,
        1024,
        40,
        "gpt-4o-mini",
    )
    assert parse_usage(chunks[-1]).tokens_cached == 1024


def test_openai_responses_reads_input_output_and_details():
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "gpt-4.1-2025-04-14",
        "usage": {
            "input_tokens": 12033,
            "input_tokens_details": {"cached_tokens": 11904},
            "output_tokens": 44,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 12077,
        },
    }
    assert parse_usage(body) == Usage(12033, 11904, None, 44, 0, "gpt-4.1-2025-04-14", None)


def test_openai_responses_stream_reads_usage_nested_in_response_completed_event():
    events = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "gpt-4.1", "usage": None}},
        {"type": "response.output_text.delta", "delta": "Hel"},
        {
            "type": "response.completed",
            "response": {
                "id": "resp_1",
                "model": "gpt-4.1",
                "status": "completed",
                "usage": {
                    "input_tokens": 900,
                    "input_tokens_details": {"cached_tokens": 512},
                    "output_tokens": 77,
                    "output_tokens_details": {"reasoning_tokens": 20},
                    "total_tokens": 977,
                },
            },
        },
    ]
    assert parse_stream_usage(events) == Usage(900, 512, None, 77, 20, "gpt-4.1", None)


def test_deepseek_reads_cache_hit_tokens_as_cached():
    body = {
        "id": "x",
        "object": "chat.completion",
        "model": "deepseek-v4-flash",
        "usage": {
            "prompt_tokens": 225000,
            "completion_tokens": 437,
            "total_tokens": 225437,
            "prompt_cache_hit_tokens": 224000,
            "prompt_cache_miss_tokens": 1000,
        },
    }
    assert parse_usage(body) == Usage(225000, 224000, None, 437, None, "deepseek-v4-flash", None)


def test_deepseek_without_prompt_tokens_adds_hit_and_miss():
    usage = parse_usage(
        {"usage": {"prompt_cache_hit_tokens": 300, "prompt_cache_miss_tokens": 700, "completion_tokens": 5}}
    )
    assert (usage.tokens_in, usage.tokens_cached, usage.tokens_out) == (1000, 300, 5)


def test_anthropic_message_adds_cache_reads_and_writes_back_into_tokens_in():
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-20250514",
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {
            "input_tokens": 21,
            "cache_creation_input_tokens": 188086,
            "cache_read_input_tokens": 1500,
            "output_tokens": 393,
            "service_tier": "standard",
        },
    }
    assert parse_usage(body) == Usage(21 + 188086 + 1500, 1500, 188086, 393, None, "claude-sonnet-4-20250514")


def test_anthropic_stream_takes_input_from_message_start_and_final_output_from_message_delta():
    events = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-4-5",
                "content": [],
                "usage": {
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 4000,
                    "output_tokens": 1,
                },
            },
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 15}},
        {"type": "message_stop"},
    ]
    assert parse_stream_usage(events) == Usage(4010, 4000, 0, 15, None, "claude-opus-4-5", None)


def test_gateway_cost_comes_from_litellm_header_then_usage_cost():
    body = {"model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 1, "cost": 0.5}}
    assert parse_usage(body).gateway_cost_usd == 0.5
    assert parse_usage(body, {"X-LiteLLM-Response-Cost": "0.000123"}).gateway_cost_usd == 0.000123
    assert parse_usage(None, {"x-litellm-response-cost": "not-a-number"}).gateway_cost_usd is None


def test_missing_or_malformed_usage_is_missing_never_zero():
    assert parse_usage(None) == Usage()
    assert parse_usage({"choices": []}) == Usage()
    bad = parse_usage({"usage": {"prompt_tokens": "12", "completion_tokens": -3, "prompt_tokens_details": 7}})
    assert (bad.tokens_in, bad.tokens_out, bad.tokens_cached) == (None, None, None)


def test_sum_keeps_missing_as_missing_and_adds_known_counts():
    a = Usage(tokens_in=100, tokens_cached=None, tokens_out=10, model="m", gateway_cost_usd=0.1)
    b = Usage(tokens_in=50, tokens_cached=20, tokens_out=None, model="m")
    total = sum_usage([a, b])
    assert (total.tokens_in, total.tokens_cached, total.tokens_out, total.model) == (150, 20, 10, "m")
    assert total.tokens_cache_write is None and total.tokens_reasoning is None
    assert total.gateway_cost_usd == 0.1
    assert sum_usage([]) == Usage()
    assert (a + Usage(model="other")).model == "m,other"


def test_as_row_names_are_request_columns():
    assert set(Usage().as_row()) <= set(REQUEST_COLUMNS)
