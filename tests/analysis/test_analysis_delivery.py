"""Delivered load in the verdicts, on synthetic run directories with a known shortfall: an open-model
level is "not delivered" when it started, or started on time, too few of its arrivals; held and broken
levels are read among the delivered only; the run's peak decides exit code 7's reason. The closed model
compares the agents asked with those running."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.breaking import first_break, highest_held
from analysis.delivery import DELIVERED, NOT_DELIVERED, TOO_FEW, judge_open
from analysis.levels import load_shortfall, run_levels
from analysis.load import load_run
from analysis.model import RunData
from analysis.summary_json import summary
from tests.synthetic import T0, write_run_dir

HOLD_S = 20.0


def open_run(tmp_path, peak_started: float, peak_late: float = 0.0, peak_errors: float = 0.0, dropped=0):
    """10 arrivals/s for 20 s, every one started on time; then 100/s for 20 s, of which `peak_started`
    (a share) started, `peak_late` of those more than 100 ms late, `peak_errors` failed; `dropped` drops."""
    rows = [
        _arrivals(0.0, 10.0, 1.0, 0.0, 0.0),
        _arrivals(HOLD_S, 100.0, peak_started, peak_late, peak_errors),
    ]
    points = [[0.0, 10.0], [HOLD_S, 10.0], [HOLD_S, 100.0], [2 * HOLD_S, 100.0]]
    meta = {
        "run_id": "open",
        "start_ts": T0,
        "open_model": {"start_ts": T0, "rate_points": points, "dropped_arrivals": dropped},
    }
    return load_run(write_run_dir(tmp_path, meta, requests=pd.concat(rows, ignore_index=True)))


def _arrivals(at_s: float, rate: float, share: float, late: float, errors: float) -> pd.DataFrame:
    n = int(rate * HOLD_S * share)
    due = T0 + at_s + np.arange(n) * (HOLD_S / n)
    lateness = np.where(np.arange(n) < late * n, 250.0, 2.0)
    failed = np.arange(n) >= n - errors * n
    return pd.DataFrame(
        {
            "ts": due + lateness / 1000,
            "agent_id": (np.arange(n) % 50).astype(str),
            "operation": "chat.stream",
            "ok": (~failed).astype(int),
            "error_kind": np.where(failed, "http_5xx", ""),
            "latency_ms": 40.0,
            "ttft_ms": 10.0,
            "tokens_out": 8,
            "start_lateness_ms": lateness,
        }
    )


def test_a_level_that_started_too_few_arrivals_is_not_delivered_and_not_held(tmp_path):
    run = open_run(tmp_path, peak_started=0.6)
    table = run_levels(run).table
    assert table["delivery"].to_dict() == {10.0: DELIVERED, 100.0: NOT_DELIVERED}
    assert table.loc[100.0, "achieved_per_s"] == pytest.approx(60.0)
    assert "60/s started of 100/s asked (60.0 %)" in table.loc[100.0, "delivery_why"]
    assert highest_held(run_levels(run)) == 10.0
    short = load_shortfall(run)
    assert short is not None and short.level == 100.0 and short.unit == "arrivals/s"
    doc = summary(run)
    assert doc["delivery"]["delivered"] is False and doc["delivery"]["level"] == 100.0
    assert doc["breaking_level"]["held_up_to"] == 10.0
    assert [d["level"] for d in doc["breaking_level"]["not_delivered"]] == [100.0]


def test_a_level_within_the_share_and_the_poisson_noise_is_delivered(tmp_path):
    run = open_run(tmp_path, peak_started=0.97, peak_late=0.04)  # 3 % short, 4 % late: under 5 %
    assert (run_levels(run).table["delivery"] == DELIVERED).all()
    assert load_shortfall(run) is None
    assert highest_held(run_levels(run)) == 100.0


@pytest.mark.parametrize(
    ("late", "dropped", "reason"), [(0.2, 0, "20.0 % late"), (0.0, 300, "% dropped (300)")]
)
def test_late_or_dropped_arrivals_above_five_percent_are_not_delivered(tmp_path, late, dropped, reason):
    run = open_run(tmp_path, peak_started=1.0, peak_late=late, dropped=dropped)
    short = load_shortfall(run)
    assert short is not None and short.level == 100.0 and reason in short.why, short


def test_an_undelivered_level_does_not_break_either(tmp_path):
    """Its errors are the load generator's shortfall's as much as the gateway's: not its breaking level."""
    run = open_run(tmp_path, peak_started=0.5, peak_errors=0.5)
    assert first_break(run_levels(run)) is None
    assert summary(run)["breaking_level"]["why"] == "did not break"


def test_a_level_asked_too_few_arrivals_is_not_judged(tmp_path):
    run = open_run(tmp_path, peak_started=1.0)
    table = run_levels(run).table.copy()
    table["seconds"] = 0.5  # 5 arrivals asked at 10/s
    judge_open(table)
    assert table.loc[10.0, "delivery"] == TOO_FEW


def closed_run(tmp_path, running_peak: int) -> RunData:
    ts = T0 + np.arange(20.0)
    users = pd.DataFrame({"ts": ts, "users": np.minimum(np.arange(20) + 1, running_peak), "target_users": 10})
    requests = pd.DataFrame(
        {"ts": ts + 0.5, "agent_id": "0", "operation": "chat", "ok": 1, "latency_ms": 30.0, "error_kind": ""}
    )
    return load_run(write_run_dir(tmp_path, {"run_id": "closed"}, requests=requests, users=users))


def test_the_closed_model_compares_the_agents_asked_with_those_running(tmp_path):
    run = closed_run(tmp_path / "short", running_peak=6)
    assert run_levels(run).table.loc[6.0, "asked"] == 10  # asked beside running, per level
    short = load_shortfall(run)
    assert short is not None and short.level == 10.0 and short.unit == "agents"
    assert "6 of 10 agents asked were running at most (60.0 %)" in short.why
    assert load_shortfall(closed_run(tmp_path / "full", running_peak=10)) is None
