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


def tpot_notes(run: RunData) -> list[str]:
    """TPOT's definition, and how many successful streams it was withheld from, and why."""
    req = run.requests
    if req is None or req.empty or REQUEST.ttft_ms not in req:
        return []
    streams = req[(req["ok"] == 1) & req[REQUEST.ttft_ms].notna()]
    if streams.empty:
        return []
    unrecorded = (
        int(streams[REQUEST.content_tokens].isna().sum())
        if REQUEST.content_tokens in streams
        else len(streams)
    )
    withheld = int(with_scores(streams, keep=())[TPOT_MS].isna().sum()) - unrecorded
    note = (
        "TPOT = (last received content token - first) / (received content tokens - 1): the pace of the "
        "text the client received, never the gateway's usage count (contract/derived.py)"
    )
    if withheld:
        note += (
            f"; withheld from {withheld:,} of {len(streams):,} streams that delivered at most one content "
            "token (tool calls, events or one chunk only)"
        )
    if unrecorded:
        note += (
            f"; not measured for {unrecorded:,} streams that recorded no content_tokens (a run from before)"
        )
    return [note]


def decode_rate(requests: pd.DataFrame) -> pd.Series:
    """Output tokens per second of generation (first token to last byte), per stream request."""
    generation_s = (requests[REQUEST.latency_ms] - requests[REQUEST.ttft_ms]) / 1000.0
    return (requests[REQUEST.tokens_out] / generation_s.where(generation_s > 0)).replace([np.inf], np.nan)


def main_operation(run: RunData, table: pd.DataFrame) -> str:
    """The operation a run's headline latency is of: the busiest that streamed a model's answer (it has
    a TTFT), else the busiest that is not a follow-up of earlier work (a poll repeats one task id until
    the task is done: its count is the poll interval's, not the load's), else the busiest."""
    streamed = table[table["ttft_n"].fillna(0) > 0] if "ttft_n" in table else table.iloc[0:0]
    if not streamed.empty:
        return str(streamed["requests"].idxmax())
    firsts = table.drop(index=_repeating_operations(run), errors="ignore")
    return str((firsts if not firsts.empty else table)["requests"].idxmax())


def _repeating_operations(run: RunData) -> list[str]:
    """Operations whose requests name the same task id more than once (polls)."""
    req = run.requests
    if req is None or R.task_id not in req:
        return []
    with_task = req[req[R.task_id].notna()]
    per_task = with_task.groupby(R.operation)[R.task_id].agg(["size", "nunique"])
    return [str(op) for op in per_task.index[per_task["size"] > per_task["nunique"]]]
