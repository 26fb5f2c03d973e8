"""The fit profile's report section (the answer, the per-step table, each limit, the projection), with the
idle capacity beside it when the runs folder holds a capacity run of the same target: "a working agent
costs N× an idle one here".

Same target: runs grouped as the history index groups them (analysis/index.py: the gateway and what the
sampler watched). The newest such capacity run whose fit is stable (R² >= 0.95, analysis/capacity.py) is
the one compared; none found, nothing is said.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.capacity import run_capacity
from analysis.load import load_run
from analysis.model import RunData, Section, per_run
from analysis.run_target import target_of
from analysis.working_fit import FIT, STEP_COLUMNS, STEP_LABELS, FitAnswer, fit_answer
from contract.schema import RUN_JSON


@dataclass(frozen=True)
class IdleBeside:
    """An idle capacity run of the same target: its marginal MiB per idle agent, and the ratio."""

    run_id: str
    mib_per_idle_agent: float
    r2: float
    working_per_idle: float | None

    def text(self) -> str:
        ratio = self.working_per_idle
        said = f": a working agent costs {ratio:.1f}× an idle one here" if ratio else ""
        return (
            f"idle capacity beside it: run {self.run_id} (capacity, same target), "
            f"{self.mib_per_idle_agent:,.2f} MiB per idle agent (R² {self.r2:.3f}){said}"
        )


@per_run
def idle_beside(run: RunData) -> IdleBeside | None:
    """The newest stable capacity run of the same target in the run's folder; None when there is none."""
    answer = fit_answer(run)
    known = isinstance(run.meta.get("target"), dict)  # an unknown target is no other run's
    if answer is None or answer.mib_per_agent is None or not known or not run.path.parent.is_dir():
        return None
    target = target_of(run.meta)
    for path in sorted(run.path.parent.iterdir(), key=_mtime, reverse=True):
        meta = _capacity_meta(path) if path != run.path else None
        if meta is None or target_of(meta) != target:
            continue
        result = run_capacity(load_run(path))
        if result.fit is not None and result.stable and result.fit.slope > 0:
            ratio = answer.mib_per_agent / result.fit.slope
            return IdleBeside(str(meta.get("run_id", path.name)), result.fit.slope, result.fit.r2, ratio)
    return None


def _mtime(path: Path) -> float:
    return path.stat().st_mtime


def _capacity_meta(path: Path) -> dict | None:
    """run.json of a capacity run, else None (not a run, unreadable, another profile)."""
    try:
        meta = json.loads((path / RUN_JSON).read_text())
    except (OSError, ValueError):
        return None
    is_capacity = isinstance(meta, dict) and (meta.get("profile") or {}).get("name") == "capacity"
    return meta if is_capacity else None


def fit_section(run: RunData) -> Section | None:
    """The report's fit section; the plot is attached by analysis/report.py."""
    answer = fit_answer(run)
    if answer is None:
        return None
    shown = answer.steps[list(STEP_COLUMNS)].dropna(axis=1, how="all")  # a figure no step measured: left out
    tables = [
        ("steps (steady figures)", shown.rename(columns=STEP_LABELS).rename_axis("fit step")),
        ("memory per working agent (OLS over the working steps)", memory_table(answer)),
        ("limits", limits_table(answer)),
    ]
    if answer.projection is not None:
        tables.append(("projection to other boxes (not measured)", answer.projection))
    idle = idle_beside(run)
    present = [(caption, table) for caption, table in tables if not table.empty]
    return Section(FIT, present, [*answer.notes, *([idle.text()] if idle else [])])


def memory_table(answer: FitAnswer) -> pd.DataFrame:
    """Both halves where both were measured: the target (the gateway, its workers) and the processes
    measured apart from it (--sidecar-match: an MCP server, a database)."""
    rows = []
    for what, fit in (("target", answer.memory_fit), ("sidecar (measured apart)", answer.sidecar_fit)):
        if fit is not None:
            interval = f"{fit.slope_low:,.2f}–{fit.slope_high:,.2f}"
            rows.append(
                {
                    "memory of": what,
                    "MiB per working agent": fit.slope,
                    "95 % interval": interval,
                    "R²": fit.r2,
                    "steps": fit.points,
                    "at 0 agents (MiB)": fit.intercept,
                }
            )
    return pd.DataFrame(rows).set_index("memory of") if rows else pd.DataFrame()


def limits_table(answer: FitAnswer) -> pd.DataFrame:
    """Per limit: its value, the agents it lets fit, measured or extrapolated, the line it came from."""
    return pd.DataFrame(
        [
            {
                "limit": lim.name,
                "value": lim.limit,
                "unit": lim.unit,
                "agents that fit": lim.agents,
                "how": lim.how,
                "fit slope per agent": lim.fit.slope if lim.fit else None,
                "R²": lim.fit.r2 if lim.fit else None,
                "binds": lim.name == answer.binding,
            }
            for lim in answer.limits
        ]
    ).set_index("limit")
