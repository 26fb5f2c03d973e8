"""The fit profile's plot: one panel per limit figure the steps measured (target RSS, host available
memory, CPU, latency p95), each step a dot, each limit's OLS line and its limit drawn, the binding limit's
panel shaded, the agents that fit marked.

Draws and saves only; the steps, fits and limits come from analysis/working_fit.py.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from analysis.working_fit import FitAnswer
from contract.fit_limits import AVAILABLE, CPU, MEMORY, SLO

# (limit, step column, axis label)
PANELS = (
    (MEMORY, "rss_mib", "target RSS (MiB)"),
    (AVAILABLE, "available_mib", "host available (MiB)"),
    (CPU, "cpu_pct", "CPU (% of the host)"),
    (SLO, "latency_p95_ms", "latency p95 (ms)"),
)


def fit_plot(answer: FitAnswer | None, out: Path) -> Path | None:
    """The panels with data, side by side (None: no fit answer, nothing drawn)."""
    if answer is None:
        return None
    steps = answer.steps
    panels = [p for p in PANELS if steps[p[1]].notna().any()]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False)
    for ax, (name, column, label) in zip(axes[0], panels, strict=True):
        _panel(ax, answer, name, column, label)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def _panel(ax, answer: FitAnswer, name: str, column: str, label: str) -> None:
    steps = answer.steps
    ax.plot(steps["agents"], steps[column], "o", ms=4, label="steps (steady)")
    limit = answer.limit(name)
    fit = answer.memory_fit if name == MEMORY else (limit.fit if limit else None)
    if fit is not None:
        top = max(answer.max_measured, limit.agents or 0) if limit else answer.max_measured
        x = np.array([1.0, float(top)])
        ax.plot(
            x,
            fit.intercept + fit.slope * x,
            "-",
            lw=1.2,
            label=f"OLS {fit.slope:,.2f}/agent, R² {fit.r2:.3f}",
        )
    if limit is not None and limit.limit is not None and name != SLO:
        ax.axhline(limit.limit, color="red", ls="--", lw=1, label=f"limit {limit.limit:,.0f}")
    if answer.fits_agents is not None:
        ax.axvline(answer.fits_agents, color="green", ls=":", lw=1, label=f"{answer.fits_agents} fit")
    if name == answer.binding:
        ax.set_facecolor("#fde2e2")
        ax.set_title(f"{name}: binds", fontsize=9)
    else:
        ax.set_title(name, fontsize=9)
    ax.set_xlabel("working agents")
    ax.set_ylabel(label)
    ax.legend(fontsize=6, frameon=False)
