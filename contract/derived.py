"""Measures derived from a requests.csv row, defined once for the live judge and the analysis (they
are not columns: the row's raw timings and usage are).

TPOT, time per output token = (last received content token − first) / (received content tokens − 1):
the pace of the text as the client received it, the peers' definition (vLLM's and AIPerf's benchmarks),
from the row's content_span_ms and content_tokens. Never from the gateway's usage: a gateway that runs
its own loop (Hermes, OpenClaw) sums its inner calls' output tokens, tool-call tokens the client never
received, and a TPOT divided by them read 2-5x too small. A request that streamed at most one content
token (a tool call, a task board, a whole answer in one chunk, no stream) has no TPOT (`has_tpot`).
Output tokens/s = output tokens / latency (the whole request, as its caller waited; usage's count).
Arithmetic only, so each function takes one row's floats or whole pandas columns alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from contract.schema import REQUEST

TPOT_MS = "tpot_ms"
OUTPUT_TOKENS_PER_S = "output_tokens_per_s"
DERIVED_METRICS = (TPOT_MS, OUTPUT_TOKENS_PER_S)


def tpot_ms(content_span_ms: Any, content_tokens: Any) -> Any:
    return content_span_ms / (content_tokens - 1)


def has_tpot(content_tokens: Any) -> Any:
    """Where TPOT is defined: a second content token was received."""
    return content_tokens > 1


def output_tokens_per_s(latency_ms: Any, tokens_out: Any) -> Any:
    return tokens_out / (latency_ms / 1000.0)


def derived_value(name: str, row: Mapping[str, Any]) -> float | None:
    """One row's derived measure (cells may be text, as the recorder writes them); None: not measured."""
    if name == TPOT_MS:
        span, received = number(row.get(REQUEST.content_span_ms)), number(row.get(REQUEST.content_tokens))
        return (
            tpot_ms(span, received)
            if span is not None and received is not None and has_tpot(received)
            else None
        )
    latency, tokens = number(row.get(REQUEST.latency_ms)), number(row.get(REQUEST.tokens_out))
    if latency is None or tokens is None:
        return None
    return output_tokens_per_s(latency, tokens) if latency > 0 else None


def number(raw: Any) -> float | None:
    """A cell as a float (the recorder's rows hold numbers, a read file's hold text); None: empty,
    unparsable or not finite (a NaN or inf a gateway sent would poison every aggregate), i.e. not
    measured."""
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None
