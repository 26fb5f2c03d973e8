"""Per-request scores derived from requests.csv: TPOT and output tokens per second (defined once in
contract/derived.py), as columns beside the raw ones. Pure: a frame in, a frame out.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from contract.derived import OUTPUT_TOKENS_PER_S, TPOT_MS, has_tpot, output_tokens_per_s, tpot_ms
from contract.schema import REQUEST

# the raw columns the scores are computed from: a narrowed frame keeps these to be scored
SCORE_INPUTS = (REQUEST.latency_ms, REQUEST.tokens_out, REQUEST.content_tokens, REQUEST.content_span_ms)
# why a run with streams has no TPOT: the same words in the headline, the console and the report
TPOT_WITHHELD = "withheld: no stream delivered two content tokens (tool calls, events or one chunk only)"
TPOT_UNRECORDED = "not measured: requests.csv records no content_tokens (a run from before the column)"


def tpot_absent(requests: pd.DataFrame) -> str:
    """Why streams that have a TTFT have no TPOT: withheld, or a run that never recorded its inputs."""
    recorded = REQUEST.content_tokens in requests and requests[REQUEST.content_tokens].notna().any()
    return TPOT_WITHHELD if recorded else TPOT_UNRECORDED


def with_scores(requests: pd.DataFrame, keep: Iterable[str] | None = None) -> pd.DataFrame:
    """The rows with tpot_ms and output_tokens_per_s added (empty where not measured: at most one content
    token received, no usage); `keep`: only these of the raw columns (a narrow copy of a day's million
    rows costs a fraction of a whole one)."""
    latency, tokens = requests[REQUEST.latency_ms], requests[REQUEST.tokens_out]
    span, received = (_column(requests, c) for c in (REQUEST.content_span_ms, REQUEST.content_tokens))
    if keep is not None:
        requests = requests[[c for c in dict.fromkeys(keep) if c in requests]]
    return requests.assign(
        **{
            TPOT_MS: tpot_ms(span, received.where(has_tpot(received))),
            OUTPUT_TOKENS_PER_S: output_tokens_per_s(latency.where(latency > 0), tokens),
        }
    )


def _column(requests: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column; all empty for a run recorded before it existed."""
    if name not in requests:
        return pd.Series(float("nan"), index=requests.index)
    return pd.to_numeric(requests[name], errors="coerce")
