"""summary.json: the run's headline figures, machine-readable (like k6's summary export), each with its
unit and sample count, for a CI job or a nightly script to read instead of parsing the report. Built
from the same functions as the report's sections; written beside report.md by write_report.

Keys are added, never renamed (docs/run-directory.md lists them); a figure that was not measured is
null, never a guess.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

from analysis.arrivals import LATE_MS, arrivals
from analysis.breaking import RULE, first_break, highest_held
from analysis.capacity import run_capacity
from analysis.capacity_rows import has_rows
from analysis.cost import dollar_total, fictional_models, priced_usage, run_prices, usage_rows
from analysis.delivery import NOT_DELIVERED
from analysis.delivery import RULE as DELIVERY_RULE
from analysis.fit import Fit
from analysis.goodput import goodput
from analysis.headline import headline, profile_of
from analysis.hosts import judged_samples
from analysis.latency import latency_table, main_operation
from analysis.levels import load_shortfall, run_levels
from analysis.model import RunData
from analysis.prices import PriceTableError
from analysis.resources import target_unread
from analysis.soak import soak_trends
from analysis.sweep import sweep
from analysis.tasks import not_done_reasons, task_counts
from analysis.validity import run_validity
from analysis.working_fit import fit_answer
from analysis.working_fit_section import idle_beside
from analysis.workload import INPUT_SIZES, asked_and_reported, size_table, unverified_sizes
from contract.schema import MIB, REQUEST, SAMPLE, SUMMARY_JSON

SUMMARY_VERSION = 1
DELIVERY_FIGURES = ("seconds", "asked", "started", "achieved_per_s", "late", "dropped")  # per level


def summary(run: RunData) -> dict[str, Any]:
    """The whole document: what ran, how it ended, and every answer the run has."""
    meta = run.meta
    head = headline(run)
    doc: dict[str, Any] = {
        "summary_version": SUMMARY_VERSION,
        "run_id": meta.get("run_id", run.path.name),
        "profile": profile_of(run),
        "exit_code": meta.get("exit_code"),
        "stop_reason": meta.get("stop_reason"),
        "headline": {
            "question": head.question,
            "answer": None if head.held is None else ("yes" if head.held else "no"),
            "verdict": head.verdict,
        },
        "requests": _requests(run),
        "latency": _latency(run),
        "breaking_level": _breaking_level(run),
        "goodput": _goodput(run),
        "arrivals": _arrivals(run),
        "sweep": _sweep(run),
        "capacity": _capacity(run),
        "fit": _fit(run),
        "soak": _soak(run),
        "peak_target_rss_mib": _peak_rss_mib(run),
        "tasks": _tasks(run),
        "cost": _cost(run),
        "sizes": _sizes(run),
        "thresholds": [
            {k: t.get(k) for k in ("expr", "passed", "value", "samples")}
            for t in meta.get("thresholds") or []
            if isinstance(t, dict)
        ],
        "delivery": _delivery(run),
        "validity": run_validity(run).as_json(),
        "missing": run.missing,
    }
    return _clean(doc)


def write_summary_json(run: RunData, out: Path) -> Path:
    path = out / SUMMARY_JSON
    path.write_text(json.dumps(summary(run), indent=2) + "\n")
    return path


def _requests(run: RunData) -> dict | None:
    table = latency_table(run)
    if table is None:
        return None
    return {"total": int(table["requests"].sum()), "failed": int(table["failed"].sum())}


def _latency(run: RunData) -> dict | None:
    """The main operation's percentiles (ms), each with its sample count (latency.main_operation)."""
    table = latency_table(run)
    if table is None:
        return None
    op = main_operation(run, table)
    row = table.loc[op]
    latency = {"n": row["latency_n"], "p50": row["latency_p50"], "p95": row["latency_p95"]}
    figures: dict[str, Any] = {"operation": op, "unit": "ms", "latency": latency}
    if "ttft_n" in row and row.get("ttft_n"):
        figures["ttft"] = {"n": row["ttft_n"], "p50": row["ttft_p50"], "p95": row["ttft_p95"]}
    if "tpot_ms_n" in row and row.get("tpot_ms_n"):
        figures["tpot"] = {"n": row["tpot_ms_n"], "p50": row["tpot_ms_p50"], "p95": row["tpot_ms_p95"]}
    return figures


def _cost(run: RunData) -> dict | None:
    """LLM dollars as billed (the gateway's own cost wherever it reported one), the price table's figure
    beside it, and the fictional entries a table figure rests on; null without usage or prices."""
    table = run_prices(run)
    if usage_rows(run)[1] == "none" or isinstance(table, PriceTableError):
        return None
    priced = priced_usage(run, table)[0]
    total = dollar_total(priced)
    return {
        "unit": "USD",
        "as_billed": total.usd,
        "basis": total.basis,
        "calls": total.calls,
        "gateway_reported": {"usd": total.gateway_usd, "calls": total.gateway_calls},
        "price_table": {"usd": total.table_usd, "calls": total.table_calls, "diff_pct": total.diff_pct},
        "fictional_prices": fictional_models(priced["model"], table),
    }


def _tasks(run: RunData) -> dict | None:
    """Tasks submitted, done and not done, and why the ended ones did not finish."""
    counts = task_counts(run)
    if not counts:
        return None
    return {**counts, "why": not_done_reasons(run)}


def _sizes(run: RunData) -> dict | None:
    """The input sizes asked vs the gateway's count per call, and whether any count confirmed them."""
    table = size_table(asked_and_reported(run))
    unverified = unverified_sizes(run)
    if table.empty and unverified is None:
        return None
    found: dict[str, Any] = {"verified": unverified is None, "note": unverified, "input": None}
    if INPUT_SIZES in table.index:
        row = table.loc[INPUT_SIZES]
        keys = ("n", "asked_mean", "reported_mean", "diff_pct", "call_error_p95_pct")
        found["input"] = {k: row[k] for k in keys}
    return found


def _breaking_level(run: RunData) -> dict | None:
    """The first level that broke the rule, in the run's unit; value null when none did."""
    levels = run_levels(run)
    if levels is None:
        return None
    broke = first_break(levels)
    return {
        "value": broke.level if broke else None,
        "unit": levels.unit,
        "rule": RULE,
        "why": broke.why if broke else "did not break",
        "held_up_to": highest_held(levels),
        "levels": len(levels.table),
        "not_delivered": [
            {"level": level, "why": row["delivery_why"]} | {k: row[k] for k in DELIVERY_FIGURES}
            for level, row in levels.table.iterrows()
            if row.get("delivery") == NOT_DELIVERED
        ],
    }


def _delivery(run: RunData) -> dict | None:
    """Whether the load was delivered at its peak (analysis/delivery.py); null without load levels."""
    levels = run_levels(run)
    if levels is None:
        return None
    short = load_shortfall(run)
    return {
        "delivered": short is None,
        "level": short.level if short else None,
        "unit": levels.unit,
        "why": short.why if short else None,
        "rule": DELIVERY_RULE,
    }


def _goodput(run: RunData) -> dict | None:
    found = goodput(run)
    if found is None:
        return None
    return {
        "share": found.requests.share,
        "slos": [s["expr"] for s in found.slos],
        "requests": {
            "scored": found.requests.scored,
            "met": found.requests.met,
            "per_s": found.requests.per_s,
        },
        "tasks": {
            "scored": found.tasks.scored,
            "met": found.tasks.met,
            "share": found.tasks.share,
            "per_s": found.tasks.per_s,
        },
        "per_slo": [
            {"slo": slo, "judged": int(r["judged"]), "met": int(r["met"]), "held": r["held"]}
            for slo, r in found.attainment.iterrows()
        ],
    }


def _arrivals(run: RunData) -> dict | None:
    found = arrivals(run)
    if found is None:
        return None
    lateness = found.lateness
    return {
        "process": found.process,
        "due": found.due,
        "started": found.started,
        "late": {
            "count": found.late,
            "share": found.late_share,
            "first_s": found.first_late_s,
            "above_ms": LATE_MS,
        },
        "dropped": {
            "count": found.dropped,
            "share": found.dropped_share,
            "first_s": found.first_dropped_s,
            "unsent": found.unsent,  # of them: issued to an agent as the run stopped, never sent
        },
        REQUEST.start_lateness_ms: {
            "n": lateness["lateness_n"],
            "p50": lateness["lateness_p50"],
            "p95": lateness["lateness_p95"],
        },
    }


def _sweep(run: RunData) -> dict | None:
    found = sweep(run)
    if found is None:
        return None
    return {
        "unit": "arrivals/s",
        "highest_rate_meeting_slos": found.best_rate,
        "breaking_rate": found.broke.level if found.broke else None,
        "latency_knee_rate": found.knee.users,
        "rates": [float(r) for r in found.table["rate"].dropna()],
    }


def _capacity(run: RunData) -> dict | None:
    if not has_rows(run.capacity) or profile_of(run) != "capacity":
        return None
    r = run_capacity(run)
    return {
        "n_max": r.n_max,
        "n_stop": r.n_stop,
        "unit": "agents",
        "marginal_mib_per_agent": r.fit.slope if r.fit else None,
        "r2": r.fit.r2 if r.fit else None,
        "fit_points": r.fit.points if r.fit else None,
        "budget_mib": r.budget_mib,
        "stop_reason": r.stop_reason,
    }


def _fit(run: RunData) -> dict | None:
    """The fit profile's answer: agents per limit (measured or extrapolated), the binding one, MiB per
    working agent with R²."""
    answer = fit_answer(run)
    if answer is None:
        return None
    fit = answer.memory_fit
    return {
        "unit": "working agents",
        "n_fit": answer.fits_agents,
        "binding": answer.binding,
        "stop_reason": answer.stop_reason,
        "n_per_limit": {
            lim.name: {"n": lim.agents, "how": lim.how, "extrapolated": lim.extrapolated, "r2": _r2(lim.fit)}
            for lim in answer.limits
        },
        "mib_per_working_agent": fit.slope if fit else None,
        "r2": _r2(fit),
        "fit_points": fit.points if fit else None,
        "first_agent_mib": answer.first_agent_mib,
        "steps": len(answer.steps),
        "idle": asdict(idle) if (idle := idle_beside(run)) else None,
    }


def _r2(fit: Fit | None) -> float | None:
    return fit.r2 if fit else None


def _peak_rss_mib(run: RunData) -> float | None:
    """The judged host's highest target RSS reading (the sampler's), MiB."""
    s = judged_samples(run)
    if s is None or s.empty or SAMPLE.target_rss_bytes not in s or target_unread(s):
        return None  # a target read 0 throughout is not measured, not 0 MiB
    return float(s[SAMPLE.target_rss_bytes].max()) / MIB


def _soak(run: RunData) -> dict | None:
    memory, errors = soak_trends(run)
    if memory.verdict == "not enough data" and errors.verdict == "not enough data":
        return None
    return {
        t.measure: {
            "verdict": t.verdict,
            "slope_per_h": t.slope_per_h,
            "unit": f"{t.unit}/h",
            "points": t.points,
            "interval": [t.slope_low_per_h, t.slope_high_per_h],
            "detectable_per_h": t.detectable_per_h,
            "warmup_s": t.warmup_s,
        }
        for t in (memory, errors)
    }


def _clean(value: Any) -> Any:
    """JSON-safe: NaN as null, numpy numbers as Python numbers."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if hasattr(value, "item"):  # numpy scalar
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
