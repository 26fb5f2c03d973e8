"""Every headline answers Yes or No with the rule that decided it, on synthetic runs with a known answer:
a load run without thresholds by the kit's default rule (errors, delivery, validity), a suspect run marked
in its answer and in every timing figure, and a sweep or breakpoint answered only at a delivered rate,
the faster rate that was not delivered named beside it as such."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.answers import DEFAULT_RULES, ERROR_LIMIT_PCT, LOAD_RULE, NO_THRESHOLD, default_rule
from analysis.headline import BUILDERS, headline
from analysis.load import load_run
from analysis.model import RunData
from analysis.summary import console_summary
from analysis.summary_json import summary
from analysis.sweep import sweep
from contract.schema import LOOP_LAG_COLUMNS
from scenarios.slo import parse_slo
from tests.synthetic import T0, soak_samples, stream_requests, write_run_dir

QUIET = {"host_cpu_pct": 30.0, "host_run_queue_per_core": 0.5, "loadgen_cpu_pct": 20.0}
DONE = {"stop_reason": "profile complete", "exit_code": 0, "profile": {"name": "smoke"}}


def smoke_run(tmp_path, error_rate: float = 0.0, lag_ms: float = 1.0, meta: dict | None = None) -> RunData:
    """60 s of a smoke run: 200 streams, quiet samples, loop-lag rows at `lag_ms`."""
    run_dir = write_run_dir(
        tmp_path,
        {"run_id": "a", "start_ts": T0} | DONE | (meta or {}),
        samples=soak_samples(60).assign(**QUIET),
        requests=stream_requests(200, 60, error_rate=error_rate),
    )
    lag = pd.DataFrame({"ts": T0 + np.arange(0, 60, 0.1), "lag_ms": lag_ms})
    lag.reindex(columns=list(LOOP_LAG_COLUMNS)).to_csv(run_dir / "loop_lag.csv", index=False)
    return load_run(run_dir)


def test_a_run_without_thresholds_answers_yes_by_the_kits_default_rule_with_the_note(tmp_path):
    head = headline(smoke_run(tmp_path))
    assert head.question == "Did the gateway hold the smoke load?"
    assert head.verdict.startswith("Yes: 0 of 200 requests failed (0 % < 1 %), the load was delivered")
    assert f"(rule: the kit's default for smoke: {LOAD_RULE})." in head.verdict
    assert head.verdict.endswith(NO_THRESHOLD) and head.held is True
    first = console_summary(smoke_run(tmp_path / "again")).splitlines()[1]
    assert first.startswith("Did the gateway hold the smoke load? Yes: ")


def test_errors_over_the_default_limit_answer_no_with_the_counts(tmp_path):
    head = headline(smoke_run(tmp_path, error_rate=0.1))
    assert head.held is False and head.verdict.startswith("No: ")
    assert f">= {ERROR_LIMIT_PCT:g} %)" in head.verdict and "of 200 requests failed" in head.verdict


def test_a_threshold_of_yours_replaces_the_default_error_rule(tmp_path):
    thresholds = [{"expr": "error_rate < 0.5", "passed": True}]
    head = headline(smoke_run(tmp_path, error_rate=0.1, meta={"thresholds": thresholds}))
    assert head.verdict.startswith("Yes: all 1 thresholds passed, the load was delivered, the run is valid")
    assert NO_THRESHOLD not in head.verdict


def test_a_suspect_run_says_so_in_its_answer_and_marks_every_timing_figure(tmp_path):
    head = headline(smoke_run(tmp_path, lag_ms=80.0))
    assert head.verdict.startswith("Yes: 0 of 200 requests failed")
    assert head.verdict.endswith(
        "LATENCY SUSPECT: event loop lag p95 80.0 ms > 20 ms; every timing figure below is marked."
    )
    timing = [f for f in head.figures if f.unit == "ms"]
    assert timing and all("LATENCY SUSPECT" in f.text() for f in timing), [f.text() for f in timing]
    assert all("SUSPECT" not in f.text() for f in head.figures if f.unit != "ms")


def test_an_invalid_run_answers_no(tmp_path):
    run = smoke_run(tmp_path)
    run_dir = run.path
    samples = soak_samples(60).assign(**(QUIET | {"loadgen_cpu_pct": 97.0}))
    write_run_dir(run_dir, samples=samples)
    head = headline(load_run(run_dir))
    assert head.verdict.startswith("No: the run is invalid: load generator CPU p90") and head.held is False
    assert "RUN INVALID: load generator CPU p90" in head.verdict
    assert summary(load_run(run_dir))["headline"]["answer"] == "no"


def test_every_profile_has_a_default_rule_and_the_load_profiles_share_one():
    assert set(BUILDERS) <= set(DEFAULT_RULES)
    assert default_rule("stress") == default_rule("spike") == LOAD_RULE


SLOS = [parse_slo("ttft_ms p95 <= 300", "--slo #1")]


def sweep_run(tmp_path, late_at: float | None, slos: bool = True, profile: str = "sweep") -> RunData:
    """A sweep of rate passes 10, 20, 30, 40 arrivals/s, 10 s each, every answer within the SLO; at
    `late_at` a tenth of the arrivals started 500 ms late (a load generator that fell behind)."""
    frames, points, passes, t = [], [], [], 0.0
    for n, rate in enumerate((10.0, 20.0, 30.0, 40.0), start=2):
        due = np.arange(0, 10, 1 / rate)
        lateness = np.where((rate == late_at) & (np.arange(due.size) % 10 == 0), 500.0, 2.0)
        rows = stream_requests(due.size, 10, error_rate=0.0, seed=n, t0=T0 + t)
        rows["ts"] = T0 + t + due + lateness / 1000
        rows["ttft_ms"] = 150.0
        frames.append(rows.assign(start_lateness_ms=lateness))
        points += [[t, rate], [t + 10, rate]]
        passes.append({"n": n, "kind": "rate", "rate": rate, "measured_rate": None})
        passes[-1] |= {"start_ts": T0 + t, "end_ts": T0 + t + 10}
        t += 10
    meta = {
        "run_id": "sweep",
        "start_ts": T0,
        "stop_reason": "profile complete",
        "exit_code": 0,
        "profile": {"name": profile},
        "open_model": {"start_ts": T0, "rate_points": points, "arrivals": "constant"},
        "sweep": passes,
        "slos": [s.as_json() for s in SLOS] if slos else [],
    }
    return load_run(write_run_dir(tmp_path, meta, requests=pd.concat(frames, ignore_index=True)))


def test_the_sweeps_answer_is_the_highest_delivered_rate_the_undelivered_one_named_beside_it(tmp_path):
    found = sweep(sweep_run(tmp_path, late_at=40.0))
    assert found.best_rate == 30.0 and list(found.not_delivered) == [40.0]
    head = headline(sweep_run(tmp_path / "head", late_at=40.0))
    assert head.verdict.startswith("Yes: 30 arrivals/s is the highest delivered rate that met every SLO")
    undelivered = "; 40 arrivals/s was asked but not delivered (10.0 % late (40)), so it is not judged"
    assert undelivered in head.verdict


def test_a_sweep_delivered_throughout_answers_its_top_rate(tmp_path):
    assert sweep(sweep_run(tmp_path, late_at=None)).best_rate == 40.0


def test_a_sweep_without_slos_answers_the_highest_delivered_rate_that_held(tmp_path):
    head = headline(sweep_run(tmp_path, late_at=40.0, slos=False))
    assert head.verdict.startswith("Yes: 30 arrivals/s is the highest delivered rate that held (no --slo")


@pytest.mark.parametrize("late_at", [30.0])
def test_an_undelivered_rate_between_delivered_ones_is_neither_met_nor_broken(tmp_path, late_at):
    found = sweep(sweep_run(tmp_path, late_at=late_at))
    assert found.best_rate == 40.0 and found.broke is None and 30.0 in found.not_delivered


def test_the_console_says_it_lists_the_top_four_operations_of_all(tmp_path):
    rows = stream_requests(60, 60, error_rate=0.0)
    rows["operation"] = [f"op{i % 6}" for i in range(60)]
    run = load_run(write_run_dir(tmp_path, {"run_id": "ops"} | DONE, requests=rows))
    text = console_summary(run)
    assert (
        "latency of 60 successful requests, by operation (top 4 of 6 operations; all in report.md):" in text
    )
    assert sum(line.startswith("  op") for line in text.splitlines()) == 4


def test_a_breakpoint_whose_peak_was_not_delivered_names_it_beside_the_answer_never_as_the_break(tmp_path):
    head = headline(sweep_run(tmp_path, late_at=40.0, profile="breakpoint"))
    assert head.verdict.startswith("No: it did not break up to 30 arrivals/s"), head.verdict
    undelivered = "; 40 arrivals/s was asked but not delivered (10.0 % late (40)), so it is not judged"
    assert undelivered in head.verdict


def test_a_soak_too_short_for_its_verdict_is_not_answered(tmp_path):
    meta = {"run_id": "s", "start_ts": T0, "stop_reason": "profile complete", "profile": {"name": "soak"}}
    run = load_run(write_run_dir(tmp_path, meta, samples=soak_samples(60).assign(**QUIET)))
    head = headline(run)
    assert head.held is None, head.verdict
    assert head.verdict.startswith("Not answered: memory: not enough data"), head.verdict
    assert f"(rule: {DEFAULT_RULES['soak']})" in head.verdict
