"""Token accounting of the mock LLM: how many tokens a call uses, and how each provider spells it.

Pure functions only (no I/O, no clock): the dialect shapes mirror OpenAI, DeepSeek, Anthropic and the
OpenAI Responses API so the kit's usage parsers are exercised end to end. Must not invent prices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from simgateway.knobs import Knobs


@dataclass(frozen=True)
class Tokens:
    """One call's token counts: `completion` includes `reasoning`; `prompt` includes the cache parts."""

    prompt: int
    cached: int
    cache_write: int
    completion: int
    reasoning: int
    content: int  # visible output tokens actually streamed


def estimate_prompt_tokens(texts: Sequence[str]) -> int:
    """ceil(chars / 4) over all message texts: the usual rough tokeniser-free estimate."""
    return math.ceil(sum(len(t) for t in texts) / 4)


def count_tokens(
    knobs: Knobs, texts: Sequence[str], max_tokens: int | None, tool_call_tokens: int | None = None
) -> Tokens:
    """Token counts for one call under the knobs; the request's max_tokens caps visible text output.
    An answer with tool calls has `tool_call_tokens` visible tokens (its streamed ticks), never capped."""
    prompt = knobs.prompt_tokens if knobs.prompt_tokens is not None else estimate_prompt_tokens(texts)
    cached = math.floor(prompt * knobs.cached_share)
    cache_write = min(knobs.cache_write_tokens, prompt - cached)
    content = knobs.output_tokens if max_tokens is None else max(0, min(knobs.output_tokens, max_tokens))
    content = content if tool_call_tokens is None else tool_call_tokens
    return Tokens(
        prompt, cached, cache_write, content + knobs.reasoning_tokens, knobs.reasoning_tokens, content
    )


def cost_usd(knobs: Knobs, t: Tokens) -> float:
    """LiteLLM-style cost: uncached input at the input price, cached at the cached price, output at output."""
    uncached = t.prompt - t.cached
    total = uncached * knobs.price_in_per_m + t.cached * knobs.price_cached_per_m
    return (total + t.completion * knobs.price_out_per_m) / 1_000_000


def usage_body(dialect: str, t: Tokens) -> dict:
    """The `usage` object exactly as the named provider returns it."""
    if dialect == "anthropic":
        return {
            "input_tokens": t.prompt - t.cached - t.cache_write,
            "cache_creation_input_tokens": t.cache_write,
            "cache_read_input_tokens": t.cached,
            "output_tokens": t.completion,
        }
    if dialect == "responses":
        return {
            "input_tokens": t.prompt,
            "input_tokens_details": {"cached_tokens": t.cached},
            "output_tokens": t.completion,
            "output_tokens_details": {"reasoning_tokens": t.reasoning},
            "total_tokens": t.prompt + t.completion,
        }
    body = {
        "prompt_tokens": t.prompt,
        "completion_tokens": t.completion,
        "total_tokens": t.prompt + t.completion,
        "prompt_tokens_details": {"cached_tokens": t.cached},
        "completion_tokens_details": {"reasoning_tokens": t.reasoning},
    }
    if dialect == "deepseek":
        body["prompt_cache_hit_tokens"] = t.cached
        body["prompt_cache_miss_tokens"] = t.prompt - t.cached
    return body


@dataclass(frozen=True)
class TaskUsage:
    """Summed usage of a task's LLM calls, in the task board's own field names."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    calls: int = 0

    def plus(self, usage: dict) -> TaskUsage:
        """Add one call's `usage` object in any dialect (input counted with its cache parts)."""
        if "prompt_tokens" in usage:
            prompt, cached = usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]
            out = usage["completion_tokens"]
        elif "cache_read_input_tokens" in usage:
            cached = usage["cache_read_input_tokens"]
            prompt = usage["input_tokens"] + usage["cache_creation_input_tokens"] + cached
            out = usage["output_tokens"]
        else:
            prompt, cached = usage["input_tokens"], usage["input_tokens_details"]["cached_tokens"]
            out = usage["output_tokens"]
        return TaskUsage(
            self.prompt_tokens + prompt,
            self.completion_tokens + out,
            self.cached_tokens + cached,
            self.calls + 1,
        )
