"""Measures derived from a requests.csv row, defined once for the live judge and the analysis (they
are not columns: the row's raw timings and usage are).

TPOT, time per output token = (latency − TTFT) / (output tokens − 1): the decode time of each token
after the first. Output tokens/s = output tokens / latency (the whole request, as its caller waited).
Arithmetic only, so each function takes one row's floats or whole pandas columns alike; a request with
at most one output token has no TPOT (`has_tpot`), and one with no usage has neither.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

TPOT_MS = "tpot_ms"
OUTPUT_TOKENS_PER_S = "output_tokens_per_s"
DERIVED_METRICS = (TPOT_MS, OUTPUT_TOKENS_PER_S)


def tpot_ms(latency_ms: Any, ttft_ms: Any, tokens_out: Any) -> Any:
    return (latency_ms - ttft_ms) / (tokens_out - 1)


def has_tpot(tokens_out: Any) -> Any:
    """Where TPOT is defined: a second output token exists."""
    return tokens_out > 1


def output_tokens_per_s(latency_ms: Any, tokens_out: Any) -> Any:
    return tokens_out / (latency_ms / 1000.0)


def derived_value(name: str, row: Mapping[str, Any]) -> float | None:
    """One row's derived measure (cells may be text, as the recorder writes them); None: not measured."""
    latency, ttft, tokens = (number(row.get(c)) for c in ("latency_ms", "ttft_ms", "tokens_out"))
    if latency is None or tokens is None:
        return None
    if name == TPOT_MS:
        return tpot_ms(latency, ttft, tokens) if ttft is not None and has_tpot(tokens) else None
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
