"""Soak verdicts: planted leaks and drifts are found with the right slope; flat series are not judged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import psutil
import pytest

from analysis.load import load_run
from analysis.soak import (
    CANNOT_TELL,
    SoakRule,
    error_rate_trend,
    memory_trend,
    soak_trends,
    undetectable,
    verdict_note,
)
from contract.schema import MIB
from contract.trend_rule import MIN_DURATION_S, TrendData
from tests.synthetic import T0, soak_samples, stepped_leak_samples, write_run_dir


def test_planted_50_mib_per_hour_leak_is_judged_leak_with_slope_within_10_percent(tmp_path):
    run = load_run(write_run_dir(tmp_path, {}, samples=soak_samples(2 * 3600, 5.0, leak_mib_per_h=50)))
    t = memory_trend(run)
    assert t.verdict == "leak"
    assert t.slope_per_h == pytest.approx(50, rel=0.10)
    assert t.slope_low_per_h < 50 < t.slope_high_per_h


def test_memory_in_1_mib_steps_with_churn_is_judged_leak_in_every_seed_at_the_shortest_soak(tmp_path):
    """A leaker of 120 MiB/h that allocates 1 MiB at a time over the shortest soak the kit allows: the
    staircase's residuals are correlated (Theil-Sen's interval held the truth in 0-3 of these seeds); the
    Newey-West interval with its bandwidth from the residuals still calls every seed a leak, and the run
    could have seen a leak of a quarter of it. The slope is within 15 % in most seeds: a gamma-spaced
    staircase has its own rate (~8 % off over 20 min), and one that slowed reads as a warm-up then a leak
    (seed 8: 60 MiB/h after a 10-minute "warm-up", still a leak)."""
    length = TrendData(MIN_DURATION_S, 1.0).shortest_run_s
    close = 0
    for seed in range(10):
        samples = stepped_leak_samples(length, leak_mib_per_h=120, step_mib=1.0, seed=seed)
        t = memory_trend(load_run(write_run_dir(tmp_path / str(seed), {}, samples=samples)))
        assert t.verdict == "leak", seed
        assert t.detectable_per_h < 30
        assert "Newey-West" in t.rule
        close += abs(t.slope_per_h - 120) <= 18
    assert close >= 8


def test_flat_noisy_memory_is_no_evidence_of_leak(tmp_path):
    run = load_run(write_run_dir(tmp_path, {}, samples=soak_samples(2 * 3600, 5.0, noise_mib=20, seed=3)))
    t = memory_trend(run)
    assert t.verdict == "no evidence of leak"
    assert abs(t.slope_per_h) < 5


def test_significant_but_tiny_creep_is_no_evidence_of_leak(tmp_path):
    """Measured on the simulator with no leak knob: 1.25 MiB/h on ~186 MiB over 27 min, p ~ 1e-13. A trend
    test alone calls that a leak; the practical floor (max of 2 MiB/h and 1 %/h of the median) does not."""
    samples = soak_samples(1800, 5.0, leak_mib_per_h=1.25, noise_mib=0.2, seed=5)
    t = memory_trend(load_run(write_run_dir(tmp_path, {}, samples=samples)))
    assert t.mk_p < 0.01 and t.slope_low_per_h > 0  # statistically a trend...
    assert t.verdict == "no evidence of leak"  # ...but not a leak anyone should chase
    assert "3 MiB/h" in t.rule  # 1 % of the ~300 MiB median


def test_short_series_is_not_enough_data(tmp_path):
    run = load_run(write_run_dir(tmp_path, {}, samples=soak_samples(120, leak_mib_per_h=5000)))
    t = memory_trend(run)
    assert t.verdict == "not enough data"
    assert f"{MIN_DURATION_S:g} s" in t.rule


def _requests_with_error_rate(rate_at: np.ndarray, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = rate_at.size
    ok = (rng.random(n) >= rate_at).astype(int)
    return pd.DataFrame(
        {
            "ts": T0 + np.linspace(0, 3600, n),
            "agent_id": "a",
            "operation": "chat",
            "ok": ok,
            "latency_ms": 100.0,
        }
    )


def test_error_rate_rising_20_points_per_hour_is_drift(tmp_path):
    rate = np.linspace(0.0, 0.2, 20000)
    t = error_rate_trend(load_run(write_run_dir(tmp_path, {}, requests=_requests_with_error_rate(rate))))
    assert t.verdict == "drift"
    assert t.slope_per_h == pytest.approx(20, rel=0.25)


def test_steady_error_rate_is_no_evidence_of_drift(tmp_path):
    rate = np.full(20000, 0.05)
    t = error_rate_trend(load_run(write_run_dir(tmp_path, {}, requests=_requests_with_error_rate(rate))))
    assert t.verdict == "no evidence of drift"


CHILD = """
import sys, time
step_mib, period = float(sys.argv[1]), 0.05
hoard, start = [], time.monotonic()
print("ready", flush=True)
for i in range(1, 400):
    if step_mib:
        hoard.append(bytearray(int(step_mib * 1024 * 1024)))
        hoard[-1][::4096] = b"x" * len(hoard[-1][::4096])
    time.sleep(max(0.0, start + i * period - time.monotonic()))
"""


@pytest.fixture
def leaky_child():
    """Start a child that grows by a known MiB every 50 ms (0 = steady); killed with its group after."""
    procs = []

    def start(step_mib: float) -> psutil.Process:
        proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(step_mib)],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        procs.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        return psutil.Process(proc.pid)

    yield start
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _sample_rss(child: psutil.Process, readings: int = 60, interval_s: float = 0.05) -> pd.DataFrame:
    rows, deadline = [], time.monotonic() + 30
    while len(rows) < readings and time.monotonic() < deadline:
        rows.append({"ts": time.time(), "target_rss_bytes": child.memory_info().rss})
        time.sleep(interval_s)
    return pd.DataFrame(rows)


@pytest.mark.e2e
@pytest.mark.parametrize(("step_mib", "verdict"), [(1.0, "leak"), (0.0, "no evidence of leak")])
def test_real_process_leaking_20_mib_per_s_is_judged_leak_and_steady_one_is_not(
    tmp_path, leaky_child, step_mib, verdict
):
    child = leaky_child(step_mib)
    run = load_run(write_run_dir(tmp_path, {}, samples=_sample_rss(child)))
    t = memory_trend(run, SoakRule(min_duration_s=2.0))
    assert t.verdict == verdict
    if step_mib:
        assert t.slope_per_h / 3600 == pytest.approx(step_mib / 0.05, rel=0.25)


def _heavy_churn(length_s: float, seed: int = 1) -> pd.DataFrame:
    """Flat memory with 0-8 MiB held and freed every 5 s (tests/soak_bank.py's heaviest churn)."""
    from tests.soak_bank import BANK, reading

    t, mib = reading(next(s for s in BANK if s.kind.startswith("flat, heavy churn")), length_s, seed)
    return soak_samples(length_s + 1, 1.0).assign(target_rss_bytes=mib * MIB)


def test_heavy_churn_at_half_the_minimum_cannot_tell_and_names_the_soak_that_could(tmp_path):
    """A run whose noise hides a 10 MiB/h leak never says "no evidence": "cannot tell at this length",
    with the detectable slope and the length that would judge it; a slope bar under it is not judged."""
    rule = SoakRule(min_duration_s=MIN_DURATION_S / 2)
    t = memory_trend(load_run(write_run_dir(tmp_path, {}, samples=_heavy_churn(700))), rule)
    assert t.verdict == CANNOT_TELL and t.detectable_per_h > t.bar_per_h == 10
    note = verdict_note(t)
    assert note is not None and note.startswith(
        f"this run could detect a target RSS slope of {t.detectable_per_h:.3g}"
    )
    assert "not 10: a soak of about " in note and "would, at this run's noise" in note
    assert undetectable(t, 1000.0) is None  # a bar it could see is judged
    assert "no length would" in (undetectable(t, 1.0) or "")  # under the rule's 2 MiB/h floor


def test_error_drift_is_judged_at_the_shortest_soak_when_requests_start_after_the_samples(tmp_path):
    """Requests begin seconds after the sampler (the ramp up) and end before it (the ramp down, 5 % of
    the run): both series are cut and measured in one window, so the error rate reaches the rule's span
    exactly when memory does."""
    length = TrendData(MIN_DURATION_S, 1.0).shortest_run_s
    samples = soak_samples(length, 1.0, noise_mib=0.1)
    requests = _requests_with_error_rate(np.full(6000, 0.01))
    requests["ts"] = T0 + np.linspace(8.0, 0.95 * length, requests.shape[0])
    memory, errors = soak_trends(load_run(write_run_dir(tmp_path, {}, samples=samples, requests=requests)))
    assert memory.verdict == "no evidence of leak"
    assert errors.verdict == "no evidence of drift", errors.rule


def test_the_soak_section_draws_the_series_its_warm_up_and_the_fitted_line(tmp_path):
    from analysis.report import write_report
    from tests.report_runs import recorded_run

    run_dir = recorded_run(tmp_path / "soak", "soak", leak_mib_per_h=120.0)
    write_report(load_run(run_dir))
    assert (run_dir / "soak.png").stat().st_size > 10_000
    report = (run_dir / "report.md").read_text()
    soak = report[report.index("## Soak verdict") :]
    assert "soak.png" in soak and "Newey-West" in soak and "detectable" in soak
