"""The churn study from capacity.csv: sessions opened, prompted once and closed in cycles; memory retained
per closed session (the slope of memory after each close against sessions closed, with R²), memory
handed back at close, and a verdict with the rule that produced it.

Pure math on the frame (analysis/fit.py's fit): no files, no plotting (analysis/capacity_plot.py draws).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.capacity_rows import column_value, memory_column
from analysis.fit import Fit, ols
from analysis.model import Section
from contract.schema import CAPACITY_EVENT

CHURN_MIN_RETAINED_MIB = 0.1  # per closed session: smaller slopes are allocator noise, not retention
CHURN_MIN_R2 = 0.9


@dataclass
class ChurnResult:
    """Memory per closed session (slope vs sessions closed) and memory handed back at close, in MiB."""

    metric: str
    cycles: int
    sessions_closed: int
    fit: Fit | None
    retained_mib_per_session: float | None
    returned_mib_per_session: float | None
    grown_mib_per_session: float | None
    verdict: str
    kept_mib: list[float] = field(default_factory=list)  # memory above the baseline after each cycle
    suggestion: str | None = None  # what would reach a verdict, when there is none


def churn_result(
    frame: pd.DataFrame,
    metric: str | None = None,
    warmup_cycles: int = 1,
    min_retained_mib: float = CHURN_MIN_RETAINED_MIB,
    min_r2: float = CHURN_MIN_R2,
) -> ChurnResult:
    """Slope of memory after each close batch vs sessions closed (first cycles skipped as warm-up)."""
    metric = metric or str(column_value(frame, "metric") or "rss")
    mib = memory_column(frame, metric)
    opened, closed = (
        frame[frame["event"] == CAPACITY_EVENT.opened],
        frame[frame["event"] == CAPACITY_EVENT.closed],
    )
    after = pd.DataFrame({"closed": pd.to_numeric(closed["closed"]), "mib": mib[closed.index]}).dropna()
    fit = ols(after["closed"].iloc[warmup_cycles:], after["mib"].iloc[warmup_cycles:])
    open_mib, close_mib = mib[opened.index].to_numpy(), mib[closed.index].to_numpy()
    batch = pd.to_numeric(opened["n"]).to_numpy()
    pairs = min(len(open_mib), len(close_mib))
    returned = _mean_per_session(open_mib[:pairs] - close_mib[:pairs], batch[:pairs])
    base_mib = mib[frame["event"] == CAPACITY_EVENT.baseline].to_numpy()[:1]
    before = np.concatenate([base_mib, close_mib])[: len(open_mib)]
    grown = _mean_per_session(open_mib[1 : len(before)] - before[1:], batch[1 : len(before)])
    kept = [float(m - base_mib[0]) for m in after["mib"]] if len(base_mib) else []
    verdict = _churn_verdict(fit, min_retained_mib, min_r2)
    return ChurnResult(
        metric,
        len(closed),
        int(after["closed"].max()) if len(after) else 0,
        fit,
        fit.slope if fit else None,
        returned,
        grown,
        verdict,
        kept,
        _churn_suggestion(verdict, len(closed), batch),
    )


def _churn_suggestion(verdict: str, cycles: int, batch: np.ndarray) -> str | None:
    """An inconclusive churn says what would settle it: more cycles (more points for the fit), or larger
    batches (more memory per point above the allocator's noise)."""
    if not verdict.startswith(("inconclusive", "not enough cycles")):
        return None
    size = int(batch[0]) if len(batch) else 0
    return (
        f"for a verdict run more cycles (--churn-cycles {max(2 * cycles, 10)}) or larger batches "
        f"(--churn-batch {max(2 * size, 10)}): {cycles} cycle(s) leave few points after the warm-up, and "
        "memory an allocator keeps grows unevenly cycle to cycle"
    )


def kept_text(kept_mib: list[float]) -> str:
    """Memory above the baseline after each cycle: "0.0 -> 4.1 -> 12.0 MiB"."""
    return " -> ".join(f"{m:,.1f}" for m in kept_mib) + " MiB" if kept_mib else "not measured"


def _mean_per_session(deltas: np.ndarray, batch: np.ndarray) -> float | None:
    ok = batch > 0
    return float(np.mean(deltas[ok] / batch[ok])) if ok.any() else None


def _churn_verdict(fit: Fit | None, min_mib: float, min_r2: float) -> str:
    if fit is None:
        return "not enough cycles for a verdict (need 3 after warm-up)"
    if fit.slope < min_mib:
        return f"no retention (slope {fit.slope:.3f} MiB/session < {min_mib} MiB)"
    if fit.r2 < min_r2:
        return f"inconclusive: slope {fit.slope:.3f} MiB/session but R² {fit.r2:.3f} < {min_r2}"
    return f"retains {fit.slope:.2f} MiB per closed session (R² {fit.r2:.3f}): memory is not returned"


def churn_measures(result: ChurnResult) -> dict[str, object]:
    fit = result.fit
    return {
        "cycles": result.cycles,
        "sessions closed": result.sessions_closed,
        f"retained {result.metric.upper()} per closed session (MiB)": result.retained_mib_per_session,
        "retained 95% interval (MiB)": f"{fit.slope_low:.3f}–{fit.slope_high:.3f}" if fit else None,
        "R²": fit.r2 if fit else None,
        "grown per session opened (MiB)": result.grown_mib_per_session,
        "returned per session closed (MiB)": result.returned_mib_per_session,
        "kept above the baseline after each cycle": kept_text(result.kept_mib),
        "verdict": result.verdict,
    }


def churn_section(result: ChurnResult) -> Section:
    """The report's churn section: the measures, the rule, what would settle an inconclusive run."""
    table = pd.DataFrame({"value": churn_measures(result)})
    table.index.name = "measure"
    notes = [
        "Retained per closed session = OLS slope of target memory (read after each batch closed) against "
        "sessions closed so far, first cycle skipped as warm-up.",
        f"Verdict rule: retention when the slope is >= {CHURN_MIN_RETAINED_MIB} MiB/session with R² >= "
        f"{CHURN_MIN_R2}.",
        *([result.suggestion[:1].upper() + result.suggestion[1:] + "."] if result.suggestion else []),
    ]
    return Section(title="Churn (open, prompt, close)", tables=[("Churn", table)], notes=notes)
