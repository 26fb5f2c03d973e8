"""The sweep's table and its answer: per pass (synchronous, throughput, each rate) the asked rate, the
rate the closed passes measured (successes finished in their second half: what the rates are spaced
by), the achieved rates, TTFT/TPOT/latency percentiles with n, error rate and goodput; on top, the
highest rate that met every SLO and the rate where errors or an SLO broke. Pure: RunData in, a record
out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.breaking import MIN_LEVEL_REQUESTS, Break, first_break
from analysis.goodput import slos_of
from analysis.knee import LATENCY_RISE, Knee, find_knee
from analysis.levels import ARRIVALS_PER_S, Levels, due_ts, judged_requests, level_table
from analysis.model import RunData, per_run

RATE = "rate"


@dataclass(frozen=True)
class Sweep:
    table: pd.DataFrame  # one row per pass, indexed by pass number
    best_rate: float | None  # the highest asked rate whose pass met every SLO (None: none did, or no SLO)
    broke: Break | None  # the first rate pass that broke (errors > 5 % or an SLO short)
    knee: Knee  # latency p95 over the rate passes
    slos: list[str]


@per_run
def sweep(run: RunData) -> Sweep | None:
    """The sweep's answer; None when run.json has no sweep passes or requests.csv no rows."""
    passes = [p for p in run.meta.get("sweep") or [] if isinstance(p, dict) and "start_ts" in p]
    req = run.requests
    if not passes or req is None or req.empty:
        return None
    req = judged_requests(run)
    due = due_ts(req)
    n = pd.Series(np.nan, index=req.index)
    for p in passes:
        n[(due >= p["start_ts"]) & (due < p["end_ts"])] = p["n"]
    table = level_table(run, req, n)
    info = pd.DataFrame(passes).set_index("n")
    table = info[["kind", "rate", "measured_rate"]].join(table, how="left")
    hold = (info["end_ts"] - info["start_ts"]).where(lambda s: s > 0)
    table.insert(3, "sent_per_s", table["requests"] / hold)
    table.insert(4, "ok_per_s", (table["requests"] - table["failed"]) / hold)
    table.index.name = "pass"
    rates = table[(table["kind"] == RATE) & table["rate"].notna()].set_index("rate").sort_index()
    levels = Levels(ARRIVALS_PER_S, rates, "the sweep's rate passes")
    slos = [s["expr"] for s in slos_of(run)]
    held = rates[(rates["requests"] >= MIN_LEVEL_REQUESTS) & (rates.get("slo_missed", "") == "")]
    best = float(held.index.max()) if slos and len(held) else None
    knee = find_knee(
        rates.index.to_numpy(float),
        rates["latency_p95_ms"].to_numpy(float),
        "latency p95",
        LATENCY_RISE,
        True,
    )
    return Sweep(table, best, first_break(levels), knee, slos)


def sweep_answer(s: Sweep) -> str:
    """The sentence on top of the table."""
    if not s.slos:
        best = "no --slo given, so no rate is judged against SLOs"
    elif s.best_rate is None:
        best = f"no rate met every SLO ({'; '.join(s.slos)})"
    else:
        best = f"{s.best_rate:.3g} arrivals/s is the highest rate that met every SLO ({'; '.join(s.slos)})"
    broke = (
        f"it broke at {s.broke.level:.3g} arrivals/s ({s.broke.why})"
        if s.broke
        else "no rate broke (errors <= 5 % and every SLO held at each)"
    )
    knee = f"latency knee at {s.knee.users:.3g} arrivals/s" if s.knee.users is not None else "no latency knee"
    return f"{best[:1].upper()}{best[1:]}; {broke}; {knee}."
