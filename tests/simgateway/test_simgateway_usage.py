"""Token accounting and usage dialects of the mock LLM, pinned without a server."""

from __future__ import annotations

import pytest

from simgateway.knobs import Knobs
from simgateway.usage import TaskUsage, Tokens, cost_usd, count_tokens, estimate_prompt_tokens, usage_body

T = Tokens(prompt=100, cached=40, cache_write=10, completion=25, reasoning=5, content=20)


def test_prompt_estimate_is_ceil_chars_over_4():
    assert estimate_prompt_tokens(["abcd", "e"]) == 2
    assert estimate_prompt_tokens([]) == 0


def test_cached_share_floors_and_max_tokens_caps_visible_output():
    k = Knobs(prompt_tokens=99, cached_share=0.5, output_tokens=20, reasoning_tokens=3)
    t = count_tokens(k, ["ignored"], max_tokens=7)
    assert (t.prompt, t.cached, t.content, t.completion, t.reasoning) == (99, 49, 7, 10, 3)


def test_openai_dialect_shape():
    assert usage_body("openai", T) == {
        "prompt_tokens": 100,
        "completion_tokens": 25,
        "total_tokens": 125,
        "prompt_tokens_details": {"cached_tokens": 40},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }


def test_deepseek_dialect_adds_cache_hit_and_miss():
    body = usage_body("deepseek", T)
    assert (body["prompt_cache_hit_tokens"], body["prompt_cache_miss_tokens"]) == (40, 60)
    assert body["prompt_tokens"] == 100


def test_anthropic_dialect_splits_input_into_uncached_write_and_read():
    assert usage_body("anthropic", T) == {
        "input_tokens": 50,
        "cache_creation_input_tokens": 10,
        "cache_read_input_tokens": 40,
        "output_tokens": 25,
    }


def test_responses_dialect_shape():
    body = usage_body("responses", T)
    assert body["input_tokens"] == 100 and body["input_tokens_details"] == {"cached_tokens": 40}
    assert body["output_tokens"] == 25 and body["output_tokens_details"] == {"reasoning_tokens": 5}


def test_cost_prices_uncached_cached_and_output_separately():
    k = Knobs(price_in_per_m=0.14, price_cached_per_m=0.014, price_out_per_m=0.28)
    assert cost_usd(k, T) == pytest.approx((60 * 0.14 + 40 * 0.014 + 25 * 0.28) / 1e6)


@pytest.mark.parametrize("dialect", ["openai", "deepseek", "anthropic", "responses"])
def test_task_usage_reads_every_dialect_to_the_same_totals(dialect):
    total = TaskUsage().plus(usage_body(dialect, T)).plus(usage_body(dialect, T))
    assert total == TaskUsage(prompt_tokens=200, completion_tokens=50, cached_tokens=80, calls=2)
