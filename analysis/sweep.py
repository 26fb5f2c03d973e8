"""The sweep's table and its answer: per pass (synchronous, throughput, each rate) the asked rate, the
rate the closed passes measured (successes finished in their second half: what the rates are spaced
by), the achieved rates, TTFT/TPOT/latency percentiles with n, error rate and goodput; on top, the
highest rate that met every SLO and the rate where errors or an SLO broke, both among the rates the load
generator delivered (a rate it did not deliver was neither met nor broken by the gateway: it is named
beside the answer as such). Pure: RunData in, a record out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.breaking import Break, first_break, highest_held, judged_levels
from analysis.delivery import NOT_DELIVERED
from analysis.goodput import slos_of
from analysis.knee import LATENCY_RISE, Knee, find_knee
from analysis.levels import ARRIVALS_PER_S, Levels, due_ts, judged_requests, level_table, run_levels
from analysis.model import RunData, per_run

RATE = "rate"


@dataclass(frozen=True)
class Sweep:
    table: pd.DataFrame  # one row per pass, indexed by pass number
    best_rate: float | None  # the highest delivered rate whose pass met every SLO (None: none did, or no SLO)
    broke: Break | None  # the first delivered rate pass that broke (errors > 5 % or an SLO short)
    knee: Knee  # latency p95 over the rate passes
    slos: list[str]
    held: float | None = None  # the highest delivered rate below the break (errors <= 5 %, SLOs met)
    not_delivered: dict[float, str] = field(default_factory=dict)  # rate: why it was not delivered


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
    _add_delivery(rates, run_levels(run))
    levels = Levels(ARRIVALS_PER_S, rates, "the sweep's rate passes")
    slos = [s["expr"] for s in slos_of(run)]
    judged = judged_levels(levels)
    met = judged[judged.get("slo_missed", pd.Series("", index=judged.index)).fillna("") == ""]
    best = float(met.index.max()) if slos and len(met) else None
    short = rates[rates["delivery"] == NOT_DELIVERED]["delivery_why"] if "delivery" in rates else pd.Series()
    knee = find_knee(
        rates.index.to_numpy(float),
        rates["latency_p95_ms"].to_numpy(float),
        "latency p95",
        LATENCY_RISE,
        True,
    )
    return Sweep(
        table,
        best,
        first_break(levels),
        knee,
        slos,
        highest_held(levels),
        {float(r): str(w) for r, w in short.items()},
    )


def _add_delivery(rates: pd.DataFrame, levels: Levels | None) -> None:
    """Each rate pass's delivery, from the run's open-model levels (late, dropped and started arrivals at
    that asked rate: analysis/delivery.py); none when the run has no such levels."""
    if levels is None or "delivery" not in levels.table:
        return
    at = levels.table.reindex(rates.index.to_series().round(6).to_numpy())
    rates["delivery"] = at["delivery"].to_numpy()
    rates["delivery_why"] = at["delivery_why"].to_numpy()


def best_text(s: Sweep) -> tuple[str, bool]:
    """The answer: the highest delivered rate that met every SLO (without SLOs, the highest that held),
    with the undelivered rates above it named as such; and whether there is one."""
    if not s.slos:
        found = s.held
        best = (
            f"{found:.3g} arrivals/s is the highest delivered rate that held (no --slo given: errors <= 5 %)"
            if found is not None
            else "no delivered rate held (no --slo given: errors <= 5 %)"
        )
    else:
        found = s.best_rate
        slos = "; ".join(s.slos)
        best = (
            f"{found:.3g} arrivals/s is the highest delivered rate that met every SLO ({slos})"
            if found is not None
            else f"no delivered rate met every SLO ({slos})"
        )
    above = {r: why for r, why in s.not_delivered.items() if found is None or r > found}
    if above:
        rate = max(above)
        best += f"; {rate:.3g} arrivals/s was asked but not delivered ({above[rate]}), so it is not judged"
    return best, found is not None


def broke_text(s: Sweep) -> str:
    """Where the delivered rates broke, or that none did."""
    if s.broke:
        return f"it broke at {s.broke.level:.3g} arrivals/s ({s.broke.why})"
    return "no delivered rate broke (errors <= 5 % and every SLO held at each)"


def sweep_answer(s: Sweep) -> str:
    """The sentence on top of the table."""
    best, broke = best_text(s)[0], broke_text(s)
    knee = f"latency knee at {s.knee.users:.3g} arrivals/s" if s.knee.users is not None else "no latency knee"
    return f"{best[:1].upper()}{best[1:]}; {broke}; {knee}."
