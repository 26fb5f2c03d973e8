"""Goodput: which requests and tasks met every service level (--slo, recorded in run.json "slos"),
their share and rate with counts, and each SLO's attainment. Pure: RunData (or rows) in, records and
DataFrames out.

The rule is the live judge's (scenarios/slo.py): requests of the operations that measure every request
SLO's metric are scored, a failed one counting as a miss, those the run's own stop cut short left out;
every task is scored and meets its SLOs when it is done, within every task bound, and none of its
requests (by task_id) missed one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.model import RunData, per_run
from analysis.scores import with_scores
from contract import schema
from contract.compare import COMPARE
from contract.schema import REQUEST, TASK_STATUS


@dataclass(frozen=True)
class Share:
    """Of `scored` requests (tasks), `met` met every SLO: share and rate (met per second)."""

    scored: int
    met: int
    per_s: float | None

    @property
    def share(self) -> float | None:
        return self.met / self.scored if self.scored else None


@dataclass(frozen=True)
class Goodput:
    slos: list[dict]
    requests: Share
    tasks: Share
    attainment: pd.DataFrame  # one row per SLO: scored, met, share, required, held


def slos_of(run: RunData) -> list[dict]:
    """The run's SLOs as run.json recorded them (the parsed form: metric, op, value, attainment)."""
    found = run.meta.get("slos")
    keys = {"expr", "column", "of", "op", "value", "attainment"}
    return [s for s in found if isinstance(s, dict) and keys <= set(s)] if isinstance(found, list) else []


def request_verdicts(requests: pd.DataFrame, slos: list[dict]) -> pd.DataFrame:
    """Per request: `scored`, `met` (every request SLO), and `met_<i>` per SLO i (task SLOs: empty)."""
    bounds = [(i, s) for i, s in enumerate(slos) if s["of"] == "requests"]
    keep = (
        schema.REQUEST.ok,
        schema.REQUEST.operation,
        schema.REQUEST.error_kind,
        *(s["column"] for _, s in bounds),
    )
    req = with_scores(requests, keep=keep)
    ok = req["ok"] == 1
    values = {i: req[s["column"]] for i, s in bounds}
    met = {i: ok & _holds(values[i], s) for i, s in bounds}
    measuring = ok & np.logical_and.reduce([values[i].notna() for i, _ in bounds] or [ok])
    scored_ops = set(req.loc[measuring, "operation"]) if bounds else set()
    cut = req[REQUEST.error_kind] == schema.ERROR_INTERRUPTED
    scored = req["operation"].isin(scored_ops) & ~cut
    out = pd.DataFrame({"scored": scored}, index=req.index)
    out["met"] = scored & np.logical_and.reduce([m for m in met.values()] or [scored])
    for i, m in met.items():
        out[f"met_{i}"] = m
    return out


def task_verdicts(
    tasks: pd.DataFrame, slos: list[dict], requests: pd.DataFrame | None, rv: pd.DataFrame | None
) -> pd.DataFrame:
    """Per task: `met` when done, within every task SLO, and none of its scored requests (`rv`, the
    request verdicts) missed; `met_<i>` per task SLO i."""
    met = tasks["status"] == TASK_STATUS.done
    out = pd.DataFrame({"scored": True}, index=tasks.index)
    for i, s in enumerate(slos):
        if s["of"] == "tasks":
            out[f"met_{i}"] = _holds(tasks[s["column"]], s)
            met &= out[f"met_{i}"]
    if requests is not None and rv is not None:
        missed = set(requests.loc[rv["scored"] & ~rv["met"], "task_id"].dropna())
        met &= ~tasks["task_id"].isin(missed)
    out["met"] = met
    return out


@per_run
def goodput(run: RunData) -> Goodput | None:
    """The run's goodput; None when it has no SLOs."""
    slos = slos_of(run)
    if not slos:
        return None
    req, tasks = run.requests, run.tasks
    rv = request_verdicts(req, slos) if req is not None and not req.empty else None
    tv = task_verdicts(tasks, slos, req, rv) if tasks is not None and not tasks.empty else None
    span = _span_s(req)
    return Goodput(slos, _share(rv, span), _share(tv, span), attainment_table(slos, rv, tv))


def attainment_table(slos: list[dict], rv: pd.DataFrame | None, tv: pd.DataFrame | None) -> pd.DataFrame:
    """Per SLO: how many of its requests (tasks) were judged, how many met it, and whether the share
    reached its required attainment (pNN, or 95 %)."""
    rows = []
    for i, s in enumerate(slos):
        frame = rv if s["of"] == "requests" else tv
        judged = frame[frame["scored"]] if frame is not None else None
        n = 0 if judged is None else len(judged)
        met = 0 if judged is None else int(judged[f"met_{i}"].sum())
        share = met / n if n else np.nan
        rows.append(
            {
                "slo": s["expr"],
                "of": s["of"],
                "judged": n,
                "met": met,
                "share_pct": share * 100,
                "required_pct": s["attainment"] * 100,
                "held": bool(share >= s["attainment"]) if n else None,
            }
        )
    return pd.DataFrame(rows).set_index("slo")


def _share(verdicts: pd.DataFrame | None, span_s: float | None) -> Share:
    if verdicts is None:
        return Share(0, 0, None)
    met = int(verdicts["met"].sum())
    return Share(int(verdicts["scored"].sum()), met, _rate(met, span_s))


def _holds(values: pd.Series, slo: dict) -> pd.Series:
    """Measured and within the bound (an empty cell never meets an SLO)."""
    return values.notna() & COMPARE[slo["op"]](values, slo["value"])


def _span_s(req: pd.DataFrame | None) -> float | None:
    """From the first request sent to the last one answered."""
    if req is None or req.empty or req["ts"].isna().all():
        return None
    end = req["ts"] + req[REQUEST.latency_ms].fillna(0) / 1000.0
    return float(end.max() - req["ts"].min()) or None


def _rate(met: int, span_s: float | None) -> float | None:
    return met / span_s if span_s else None
