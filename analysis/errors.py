"""Error table from requests.csv: failures grouped by operation and kind, with a sample message.

Pure: a RunData in, a DataFrame out.
"""

from __future__ import annotations

import pandas as pd

from analysis.model import RunData
from contract.schema import REQUEST


def error_table(run: RunData) -> pd.DataFrame | None:
    """Failed requests per (operation, error kind): count, share of that operation, first/last time."""
    req = run.requests
    if req is None or req.empty:
        return None
    failed = req[req["ok"] == 0]
    if failed.empty:
        return pd.DataFrame(columns=["operation", REQUEST.error_kind, "count", "share_pct", "example"])
    per_op = req.groupby("operation", dropna=False).size()
    keys = ["operation", REQUEST.error_kind]
    grouped = failed.fillna({REQUEST.error_kind: "(unclassified)"}).groupby(keys, dropna=False)
    table = grouped.agg(
        count=("ok", "size"), first_ts=("ts", "min"), last_ts=("ts", "max"), example=("error", "first")
    ).reset_index()
    table["share_pct"] = table["count"] / table["operation"].map(per_op).to_numpy() * 100
    start = req["ts"].min()
    table["first_s"] = table.pop("first_ts") - start
    table["last_s"] = table.pop("last_ts") - start
    cols = ["operation", REQUEST.error_kind, "count", "share_pct", "first_s", "last_s", "example"]
    return table[cols].sort_values("count", ascending=False, ignore_index=True)
