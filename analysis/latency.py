"""Latency per operation from requests.csv: percentiles with their sample counts, and for streams the
time to first token, inter-token latency, TPOT (time per output token), output tokens per second and
decode rate; goodput per operation when the run has SLOs. Pure: a RunData in, a DataFrame out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.goodput import request_verdicts, slos_of
from analysis.model import RunData, per_run
from analysis.scores import with_scores
from analysis.stats import describe
from contract import schema
from contract.derived import OUTPUT_TOKENS_PER_S, TPOT_MS
from contract.schema import REQUEST

STREAM_PERCENTILES = (50, 95, 99)
R = schema.REQUEST
COLUMNS = (R.operation, R.ok, R.error_kind, R.latency_ms, R.ttft_ms, R.itl_ms_mean, R.tokens_out)


@per_run
def latency_table(run: RunData) -> pd.DataFrame | None:
    """One row per operation: requests, failures, latency of successful ones (ms), stream timings."""
    req = run.requests
    if req is None or req.empty:
        return None
    slos = slos_of(run)
    verdicts = request_verdicts(req, slos) if slos else None
    req = with_scores(req, keep=COLUMNS)
    if verdicts is not None:
        req = req.assign(scored=verdicts["scored"], met=verdicts["met"])
    rows = [_operation_row(op, group) for op, group in req.groupby("operation", sort=True, dropna=False)]
    return pd.DataFrame(rows).set_index("operation")


def _operation_row(operation: str, group: pd.DataFrame) -> dict:
    ok = group[group["ok"] == 1]
    # a request the run's own stop cut short is not a failure of the gateway
    failed = (group["ok"] == 0) & (group[REQUEST.error_kind] != schema.ERROR_INTERRUPTED)
    row = {"operation": operation, "requests": len(group), "failed": int(failed.sum())}
    row.update(describe(ok[REQUEST.latency_ms], "latency_"))
    if ok[REQUEST.ttft_ms].notna().any():
        row.update(describe(ok[REQUEST.ttft_ms], "ttft_", STREAM_PERCENTILES))
        row["itl_ms_p50"] = float(ok[REQUEST.itl_ms_mean].median())
        row["itl_ms_p95"] = float(ok[REQUEST.itl_ms_mean].quantile(0.95))
        row["tokens_per_s_p50"] = float(decode_rate(ok).median())
    if ok[TPOT_MS].notna().any():
        row["tpot_ms_n"] = int(ok[TPOT_MS].notna().sum())
        row["tpot_ms_p50"] = float(ok[TPOT_MS].median())
        row["tpot_ms_p95"] = float(ok[TPOT_MS].quantile(0.95))
        row["output_tokens_per_s_p50"] = float(ok[OUTPUT_TOKENS_PER_S].median())
    if "scored" in group and group["scored"].any():
        row["goodput_pct"] = float(group.loc[group["scored"], "met"].mean() * 100)
    return row


def decode_rate(requests: pd.DataFrame) -> pd.Series:
    """Output tokens per second of generation (first token to last byte), per stream request."""
    generation_s = (requests[REQUEST.latency_ms] - requests[REQUEST.ttft_ms]) / 1000.0
    return (requests[REQUEST.tokens_out] / generation_s.where(generation_s > 0)).replace([np.inf], np.nan)
