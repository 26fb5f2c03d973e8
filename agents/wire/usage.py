"""Token usage and gateway-reported cost read from an LLM response, whatever dialect the gateway speaks.

Pure: takes an already-decoded JSON body (or one stream event) and headers; never does I/O, never
prices anything, and records a field it cannot find as None (missing), never as zero.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from contract.records import UsageFields
from contract.schema import REQUEST

N = TypeVar("N", int, float)
COST_HEADER = "x-litellm-response-cost"
_OPENAI_CHAT_KEYS = ("prompt_tokens", "completion_tokens", "prompt_cache_hit_tokens")
_RESPONSES_KEYS = ("input_tokens_details", "output_tokens_details", "total_tokens")
_ANTHROPIC_KEYS = ("cache_creation_input_tokens", "cache_read_input_tokens")
_ANTHROPIC_EVENTS = ("message", "message_start", "message_delta")


@dataclass
class Usage(UsageFields):
    """One call's (or one task's summed) usage, in requests.csv terms (its fields are the request row's
    usage columns, contract/records.py). A value: its methods give a new Usage, never change this one.

    tokens_in counts every input token, cached ones included, in every dialect (Anthropic's uncached
    `input_tokens` is converted); tokens_out includes reasoning tokens.
    """

    def __add__(self, other: Usage) -> Usage:
        """Sum two usages field by field: missing + missing stays missing, missing + n is n."""
        summed: dict[str, Any] = {
            f.name: _add(getattr(self, f.name), getattr(other, f.name)) for f in _COUNTED
        }
        return Usage(**summed, model=_join_models(self.model, other.model))

    def update(self, later: Usage) -> Usage:
        """Overlay a later stream event on an earlier one: the later event's known fields win.

        Stream events repeat cumulative counts (Anthropic's message_delta carries the final
        output_tokens), so they are folded by replacement, not added.
        """
        overlaid: dict[str, Any] = {
            f.name: _first_known(getattr(later, f.name), getattr(self, f.name)) for f in fields(self)
        }
        return Usage(**overlaid)

    def as_row(self) -> dict[str, int | float | str | None]:
        """The requests.csv columns this record fills (names match contract.schema.REQUEST_COLUMNS)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


_COUNTED = tuple(f for f in fields(Usage) if f.name != "model")


def sum_usage(usages: Iterable[Usage]) -> Usage:
    """Per-task totals from per-call usages; an empty input gives an all-missing Usage."""
    total = Usage()
    for usage in usages:
        total = total + usage
    return total


def parse_usage(body: Mapping | None, headers: Mapping[str, str] | None = None) -> Usage:
    """Read usage from one response body or one stream event (OpenAI chat/Responses, DeepSeek, Anthropic)."""
    body = body if isinstance(body, Mapping) else {}
    usage = _find_usage(body)
    counts = _read_counts(usage, body) if usage is not None else {}
    cost = _header_cost(headers)
    if cost is None and usage is not None:
        cost = _non_negative_float(usage.get("cost"))
    return Usage(**counts, model=_find_model(body), gateway_cost_usd=cost)


def parse_stream_usage(events: Iterable[Mapping], headers: Mapping[str, str] | None = None) -> Usage:
    """Fold the usage-bearing events of one streamed response into the call's usage."""
    folded = Usage()
    for event in events:
        folded = folded.update(parse_usage(event))
    return folded.update(parse_usage(None, headers))


def _find_usage(body: Mapping) -> Mapping | None:
    """The usage object: top level, or nested in a Responses `response` / Anthropic `message` event."""
    for holder in (body, body.get("response"), body.get("message")):
        if isinstance(holder, Mapping) and isinstance(holder.get("usage"), Mapping):
            return holder["usage"]
    return None


def _find_model(body: Mapping) -> str | None:
    for holder in (body, body.get("response"), body.get("message")):
        if isinstance(holder, Mapping) and isinstance(holder.get("model"), str) and holder["model"]:
            return holder["model"]
    return None


def _read_counts(usage: Mapping, body: Mapping) -> dict[str, int | None]:
    if any(key in usage for key in _OPENAI_CHAT_KEYS):
        return _openai_chat(usage)
    if any(key in usage for key in _RESPONSES_KEYS):
        return _openai_responses(usage)
    if any(key in usage for key in _ANTHROPIC_KEYS) or body.get("type") in _ANTHROPIC_EVENTS:
        return _anthropic(usage)
    return _openai_responses(usage)  # bare input/output_tokens: both dialects agree when nothing is cached


def _openai_chat(usage: Mapping) -> dict[str, int | None]:
    """OpenAI chat completions, and DeepSeek's hit/miss split of the same prompt_tokens."""
    hit = _count(usage.get("prompt_cache_hit_tokens"))
    tokens_in = _count(usage.get("prompt_tokens"))
    if tokens_in is None:
        tokens_in = _add(hit, _count(usage.get("prompt_cache_miss_tokens")))
    cached = _count(_nested(usage, "prompt_tokens_details", "cached_tokens"))
    return {
        REQUEST.tokens_in: tokens_in,
        REQUEST.tokens_cached: cached if cached is not None else hit,
        REQUEST.tokens_out: _count(usage.get("completion_tokens")),
        REQUEST.tokens_reasoning: _count(_nested(usage, "completion_tokens_details", "reasoning_tokens")),
    }


def _openai_responses(usage: Mapping) -> dict[str, int | None]:
    return {
        REQUEST.tokens_in: _count(usage.get("input_tokens")),
        REQUEST.tokens_cached: _count(_nested(usage, "input_tokens_details", "cached_tokens")),
        REQUEST.tokens_out: _count(usage.get("output_tokens")),
        REQUEST.tokens_reasoning: _count(_nested(usage, "output_tokens_details", "reasoning_tokens")),
    }


def _anthropic(usage: Mapping) -> dict[str, int | None]:
    """Anthropic's input_tokens excludes cache reads and writes; tokens_in adds them back."""
    uncached = _count(usage.get("input_tokens"))
    write = _count(usage.get("cache_creation_input_tokens"))
    read = _count(usage.get("cache_read_input_tokens"))
    tokens_in = None if uncached is None else uncached + (write or 0) + (read or 0)
    return {
        REQUEST.tokens_in: tokens_in,
        REQUEST.tokens_cached: read,
        REQUEST.tokens_cache_write: write,
        REQUEST.tokens_out: _count(usage.get("output_tokens")),
    }


def _header_cost(headers: Mapping[str, str] | None) -> float | None:
    if not headers:
        return None
    for name, value in headers.items():
        if name.lower() == COST_HEADER:
            return _non_negative_float(value)
    return None


def _nested(usage: Mapping, outer: str, inner: str) -> object:
    holder = usage.get(outer)
    return holder.get(inner) if isinstance(holder, Mapping) else None


def _count(value: object) -> int | None:
    """A token count: a non-negative whole number, else missing (a malformed field is not zero)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if value < 0 or value != int(value):
        return None
    return int(value)


def _non_negative_float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _add(a: N | None, b: N | None) -> N | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _first_known(a: object, b: object) -> object:
    return a if a is not None else b


def _join_models(a: str | None, b: str | None) -> str | None:
    """Same model stays as is; different models become a sorted comma list (priced as unknown)."""
    names = sorted({name for part in (a, b) if part for name in part.split(",")})
    return ",".join(names) or None
