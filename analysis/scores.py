"""Per-request scores derived from requests.csv: TPOT and output tokens per second (defined once in
contract/derived.py), as columns beside the raw ones. Pure: a frame in, a frame out.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from contract.derived import OUTPUT_TOKENS_PER_S, TPOT_MS, has_tpot, output_tokens_per_s, tpot_ms
from contract.schema import REQUEST


def with_scores(requests: pd.DataFrame, keep: Iterable[str] | None = None) -> pd.DataFrame:
    """The rows with tpot_ms and output_tokens_per_s added (empty where not measured: no TTFT, no
    usage, a single output token); `keep`: only these of the raw columns (a narrow copy of a day's
    million rows costs a fraction of a whole one)."""
    latency, tokens = requests[REQUEST.latency_ms], requests[REQUEST.tokens_out]
    if keep is not None:
        requests = requests[[c for c in dict.fromkeys(keep) if c in requests]]
    return requests.assign(
        **{
            TPOT_MS: tpot_ms(latency, requests[REQUEST.ttft_ms], tokens.where(has_tpot(tokens))),
            OUTPUT_TOKENS_PER_S: output_tokens_per_s(latency.where(latency > 0), tokens),
        }
    )
