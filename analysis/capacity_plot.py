"""The RSS-vs-N plot of capacity runs (readings as dots, the tail fit as a line, the budget as a rule,
N_max marked) and the churn plot (memory after each close against sessions closed, with its fit).

Draws and saves only; the points and fits come from analysis/capacity.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.capacity import CapacityResult, capacity_points
from analysis.capacity_rows import memory_column
from analysis.churn import ChurnResult
from contract.schema import CAPACITY_EVENT


def capacity_plot(runs: Mapping[str, tuple[CapacityResult, object]], out: Path) -> Path | None:
    """One line of readings per run (label -> (result, capacity frame)), each with its fitted tail."""
    if not runs:
        return None
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for i, (label, (result, frame)) in enumerate(runs.items()):
        points = capacity_points(frame, result.metric)
        ax.plot(points["n"], points["mib"], ".", ms=3, color=f"C{i}", label=f"{label} readings".strip())
        if result.fit is not None:
            fit = result.fit
            x = np.array([1.0, float(points["n"].max())])  # the tail trend, drawn back to N = 1
            ax.plot(
                x,
                fit.intercept + fit.slope * x,
                "-",
                lw=1.5,
                color=f"C{i}",
                label=f"{label} fit {fit.slope:.2f} MiB/agent, R² {fit.r2:.3f}".strip(),
            )
    first = next(iter(runs.values()))[0]
    if first.n_max is not None:
        ax.axvline(first.n_max, color="green", ls=":", lw=1, label=f"N_max = {first.n_max} agents")
    if first.budget_mib is not None:
        ax.axhline(first.budget_mib, color="red", ls="--", lw=1, label=f"budget {first.budget_mib:,.0f} MiB")
    ax.set_xlabel("agents (N)")
    ax.set_ylabel(f"target {first.metric.upper()} (MiB)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def churn_plot(result: ChurnResult, frame: pd.DataFrame, out: Path) -> Path | None:
    """Target memory read after each batch closed, against sessions closed so far, with the fit."""
    closed = frame[frame["event"] == CAPACITY_EVENT.closed]
    if closed.empty:
        return None
    mib = memory_column(frame, result.metric)[closed.index]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    x = pd.to_numeric(closed["closed"])
    ax.plot(x, mib, "o", ms=4, label="after each batch closed")
    if result.fit is not None:
        fit = result.fit
        ax.plot(
            x, fit.intercept + fit.slope * x, "-", lw=1.5, label=f"fit {fit.slope:.2f} MiB per closed session"
        )
    ax.set_xlabel("sessions closed")
    ax.set_ylabel(f"target {result.metric.upper()} (MiB)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out
