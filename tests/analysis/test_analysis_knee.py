"""Knee detection and the Little's-law check on a closed-loop load with known latency per user level."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.knee import find_knee, knees, little_check, load_levels, time_bins
from analysis.load import load_run
from analysis.report import loadgen_section, write_report
from analysis.summary import console_summary
from tests.synthetic import T0, write_run_dir

STEP_S = 60.0


def _closed_loop(latency_at_users, levels=range(1, 9)) -> pd.DataFrame:
    """Users added one per step; each sends back to back (no think time) with the level's latency."""
    rows = []
    for k in levels:
        start, end = T0 + (k - 1) * STEP_S, T0 + k * STEP_S
        lat_s = latency_at_users(k) / 1000
        for user in range(k):
            t = start + user * 0.013
            while t + lat_s <= end:
                rows.append((t, f"u{user}", lat_s * 1000))
                t += lat_s
    frame = pd.DataFrame(rows, columns=["ts", "agent_id", "latency_ms"])
    return frame.assign(operation="chat", ok=1)


def _levels(tmp_path, latency_at_users):
    run = load_run(write_run_dir(tmp_path, {}, requests=_closed_loop(latency_at_users)))
    return run, load_levels(time_bins(run, bin_s=10.0))


def test_latency_knee_found_where_latency_turns(tmp_path):
    _, levels = _levels(tmp_path, lambda k: 100.0 if k <= 5 else 100.0 * 2 ** (k - 5))
    latency_knee, error_knee = knees(levels)
    assert latency_knee.users in (5, 6)
    assert error_knee.users is None


def test_flat_latency_has_no_knee(tmp_path):
    _, levels = _levels(tmp_path, lambda k: 100.0)
    assert knees(levels)[0].users is None


def test_littles_law_in_flight_matches_throughput_times_latency_and_users(tmp_path):
    run, levels = _levels(tmp_path, lambda k: 200.0)
    check = little_check(levels)
    assert check.in_flight_vs_little == pytest.approx(1.0, abs=0.05)
    assert check.busy_ratio_high == pytest.approx(1.0, abs=0.1)  # no think time: every user busy
    assert not check.saturated


def test_generator_that_stops_keeping_users_busy_is_flagged():
    levels = pd.DataFrame(
        {
            "busy_ratio": [1.0, 0.9, 0.6, 0.3],
            "in_flight": [1, 1.8, 1.8, 1.2],
            "little_in_flight": [1, 1.8, 1.8, 1.2],
        },
        index=[1, 2, 3, 4],
    )
    assert little_check(levels).saturated


def test_error_knee_on_rising_error_rate():
    users = np.arange(1.0, 9.0)
    errors = np.array([0, 0, 0, 0, 0.5, 5, 20, 40])
    knee = find_knee(users, errors, "error rate", 1.0, relative=False)
    assert knee.users in (5, 6)


def test_a_run_whose_every_request_was_cut_short_has_no_bins_and_still_reports(tmp_path):
    """A gateway that never finished an answer before the run stopped: every row `interrupted`."""
    cut = pd.DataFrame({"ts": T0 + np.arange(4.0), "agent_id": ["u0", "u1"] * 2, "latency_ms": 5000.0})
    cut = cut.assign(operation="chat.stream", ok=0, error_kind="interrupted")
    run_dir = write_run_dir(tmp_path, {"run_id": "r"}, requests=cut)
    assert time_bins(load_run(run_dir)) is None
    assert "requests" in console_summary(load_run(run_dir))
    write_report(run_dir)
    assert (run_dir / "report.md").exists()


def test_a_saturated_load_generator_is_told_the_option_that_uses_every_core(tmp_path):
    saturated = pd.DataFrame({"ts": T0 + np.arange(100.0), "loadgen_cpu_pct": 97.0})
    requests = _closed_loop(lambda k: 200.0, levels=range(1, 3))
    run = load_run(write_run_dir(tmp_path, {"run_id": "r"}, requests=requests, samples=saturated))
    notes = loadgen_section(run).notes
    assert any("RUN INVALID" in n and "--processes" in n for n in notes), notes
    assert "--processes" in console_summary(run)
