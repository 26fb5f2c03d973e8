"""Per-request scores derived from requests.csv: TPOT and output tokens per second (defined once in
contract/derived.py), as columns beside the raw ones. Pure: a frame in, a frame out.
"""

from __future__ import annotations

import pandas as pd

from contract.derived import OUTPUT_TOKENS_PER_S, TPOT_MS, has_tpot, output_tokens_per_s, tpot_ms


def with_scores(requests: pd.DataFrame) -> pd.DataFrame:
    """The rows with tpot_ms and output_tokens_per_s added (empty where not measured: no TTFT, no
    usage, a single output token)."""
    latency, tokens = requests["latency_ms"], requests["tokens_out"]
    return requests.assign(
        **{
            TPOT_MS: tpot_ms(latency, requests["ttft_ms"], tokens.where(has_tpot(tokens))),
            OUTPUT_TOKENS_PER_S: output_tokens_per_s(latency.where(latency > 0), tokens),
        }
    )
