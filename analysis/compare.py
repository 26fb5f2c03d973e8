"""Side-by-side comparison of several runs: headline numbers per run plus median, range and coefficient
of variation across them. Pure: RunData in, DataFrame out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.model import RunData
from analysis.sessions import compare_measures
from analysis.soak import memory_trend
from analysis.stats import aggregate, describe
from analysis.tasks import task_counts
from contract.schema import MIB, REQUEST, SAMPLE

RECORDING = "recording"  # the column of a replayed session file's own figures


def headline(run: RunData) -> dict[str, float]:
    """The numbers compared across runs; NaN where the run did not measure them."""
    row: dict[str, float] = {}
    req = run.requests
    if req is not None and not req.empty:
        ok = req[req["ok"] == 1]
        row["requests"] = len(req)
        row["error %"] = float((req["ok"] == 0).mean() * 100)
        for col, label in ((REQUEST.latency_ms, "latency"), (REQUEST.ttft_ms, "TTFT")):
            d = describe(ok[col], percentiles=(50, 95))
            row.update({f"{label} p50 (ms)": d["p50"], f"{label} p95 (ms)": d["p95"], f"{label} n": d["n"]})
    counts = task_counts(run)
    if counts:
        row["tasks done"], row["tasks not done"] = counts["done"], counts["not_done"]
    s = run.samples
    if s is not None and not s.empty:
        row["peak target RSS (MiB)"] = s[SAMPLE.target_rss_bytes].max() / MIB
        row["min available (MiB)"] = s[SAMPLE.host_available_bytes].min() / MIB
    row["target RSS slope (MiB/h)"] = memory_trend(run).slope_per_h
    return row


def compare_table(runs: list[RunData]) -> pd.DataFrame:
    """Rows: measures; columns: one per run, then runs/median/min/max/cv_pct across them. Runs that
    replayed a session file (one agent on many gateways) add their replay's measures, and the
    recording's own figures as a last column (from the first such run's rows; NaN where it has none)."""
    names = column_names(runs)
    replays = [compare_measures(r) for r in runs]
    rows = [headline(r) | (replay[0] if replay else {}) for r, replay in zip(runs, replays, strict=True)]
    order = list(dict.fromkeys(m for row in rows for m in row))  # as measured, never sorted by name
    table = pd.DataFrame({name: pd.Series(row, dtype=float) for name, row in zip(names, rows, strict=True)})
    table = table.reindex(order)
    stats = pd.DataFrame([aggregate(table.loc[m]) for m in table.index], index=table.index)
    out = pd.concat([table, stats], axis=1).replace([np.inf, -np.inf], np.nan)
    recorded = next((replay[1] for replay in replays if replay), None)
    if recorded is not None:
        out[RECORDING] = pd.Series(recorded, dtype=float).reindex(out.index)
    out.index.name = "measure"
    return out


def column_names(runs: list[RunData]) -> list[str]:
    """Each run's column: its run id; runs sharing one (a run directory copied, --run-id reused) are told
    apart by their directory, and the same directory given twice by its place in the list (else they
    shared one column, and the comparison silently lost runs)."""
    ids = [str(r.meta.get("run_id", r.path.name)) for r in runs]
    names = [f"{i} ({r.path})" if ids.count(i) > 1 else i for i, r in zip(ids, runs, strict=True)]
    return [f"{n} #{k + 1}" if names.count(n) > 1 else n for k, n in enumerate(names)]
