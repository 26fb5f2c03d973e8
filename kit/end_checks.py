"""The verdicts read off the run directory at the end, before the exit code is settled: was the load
delivered at its peak (analysis/delivery.py: not delivered ends with exit code 7), and the load
generator's validity (analysis/validity.py: a saturated process ends with exit code 4, any failed rule
makes the latency figures suspect). The same functions as the report's, on the same files, so run.json,
the report, summary.json and the console agree. pandas only here, at the end (as kit/judge.py's trends).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from contract import schema
from contract.schema import REQUEST, SAMPLE
from kit.delivery import SHORTFALL

SAMPLE_INPUTS = (
    SAMPLE.ts,
    SAMPLE.host,
    SAMPLE.loadgen_cpu_pct,
    SAMPLE.loadgen_children_cpu_pct,
    SAMPLE.host_cpu_pct,
    SAMPLE.host_run_queue_per_core,
)


@dataclass(frozen=True)
class EndChecks:
    shortfall: str | None  # why the load was not delivered at its peak, as a stop reason; None: it was
    validity: dict  # run.json's `validity`


def end_checks(run_dir: Path, meta: dict) -> EndChecks:
    """The verdicts; one that cannot be read (a bug, a damaged file pandas refuses) is recorded as not
    judged, with why, and never costs the run its record or its report."""
    try:
        return _read_checks(run_dir, meta)
    except Exception as exc:  # noqa: BLE001  (the run's end must go on: its rows are whole)
        note = f"not judged: {type(exc).__name__}: {exc}"
        return EndChecks(None, {"valid": None, "suspect": None, "note": note})


def _read_checks(run_dir: Path, meta: dict) -> EndChecks:
    """Read the rows the verdicts need (run.json as saved, with `meta`'s SLOs naming their columns)."""
    from analysis.levels import LEVEL_COLUMNS, load_shortfall  # pandas at the end only (module doc)
    from analysis.load import load_run
    from analysis.validity import run_validity

    slo_columns = [s.get("column") for s in meta.get("slos") or [] if isinstance(s, dict)]
    requests = tuple(
        dict.fromkeys([*LEVEL_COLUMNS, *(c for c in slo_columns if c in schema.REQUEST_COLUMNS)])
    )
    only = {
        schema.REQUESTS_CSV: (*requests, REQUEST.agent_id),
        schema.USERS_CSV: schema.USER_COLUMNS,
        schema.SAMPLES_CSV: SAMPLE_INPUTS,
        schema.LOOP_LAG_CSV: schema.LOOP_LAG_COLUMNS,
    }
    run = load_run(run_dir, only=only)
    short = load_shortfall(run)
    return EndChecks(f"{SHORTFALL}: {short.text()}" if short else None, run_validity(run).as_json())
