"""End to end: a soak against the simulator whose task board keeps a known MiB per finished task fails
a memory-slope threshold with exit 99 naming the rule; the same soak without the leak passes; a soak too
short for a verdict warns at start. Real Locust, real simulator, real sampler; each run ~1 minute.
"""

from __future__ import annotations

import csv
import json

import pytest

from contract.exit_codes import OK, THRESHOLD_FAILED
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e

# ~1 task/s x 3 MiB = ~10,000 MiB/h when leaking; flat, the task workers coming and going in the
# gateway's tree move its RSS by tens of MiB, a slope of a few hundred MiB/h either way over 45 s.
SLOPE_RULE = "target_rss_slope_mib_per_h < 3000"
LEAK_MIB = 3.0
BOARD = "--task-seconds 0.3 --dispatch-interval 0.2 --worker-mib 0 --task-llm-calls 0"


def _soak(run_dir, leak_mib: float, duration: str, *extra: str):
    return run_locust(
        run_dir,
        "TaskAgent",
        "--load-profile",
        "soak",
        "--peak-users",
        "4",
        "--ramp",
        "2s",
        "--duration",
        duration,
        "--sample-interval",
        "0.5",
        "--sim-args",
        f"{BOARD} --leak-mib-per-task {leak_mib}",
        *extra,
        timeout=180,
    )


def _tasks_per_hour(run_dir) -> float:
    with open(run_dir / "tasks.csv", newline="") as file:
        done = sorted(float(r["finished_ts"]) for r in csv.DictReader(file) if r["status"] == "done")
    return (len(done) - 1) / ((done[-1] - done[0]) / 3600)


def _thresholds(run_dir) -> dict[str, dict]:
    meta = json.loads((run_dir / "run.json").read_text())
    return {t["expr"]: t for t in meta["thresholds"]}


@pytest.mark.parametrize(("leak_mib", "code"), [(LEAK_MIB, THRESHOLD_FAILED), (0.0, OK)])
def test_a_leaking_soak_fails_the_slope_threshold_and_a_flat_one_passes(tmp_path, leak_mib, code):
    run_dir = tmp_path / "run"
    # the leak verdict's rule (significant and >= 2 MiB/h) is built for soaks of 10 minutes and more: over
    # 50 s, a flat target's allocator noise (~0.3 MiB, ~20 MiB/h) can pass it; it gates the leaking run only
    verdict = ["--threshold", "memory_leak == 0"] if leak_mib else []
    proc = _soak(run_dir, leak_mib, "50s", "--trend-min-duration", "30", "--threshold", SLOPE_RULE, *verdict)
    assert proc.returncode == code, proc.stderr[-3000:]
    th = _thresholds(run_dir)
    slope = th[SLOPE_RULE]
    assert slope["samples"] >= 20 and slope["value"] is not None
    assert "soak verdict needs" not in proc.stderr
    if leak_mib:
        assert slope["passed"] is False
        # the known truth: leak MiB per finished task x tasks finished per hour, within 50 %
        assert slope["value"] == pytest.approx(leak_mib * _tasks_per_hour(run_dir), rel=0.5)
        assert th["memory_leak == 0"]["passed"] is False, proc.stdout[-1500:]
        assert f"THRESHOLD FAILED: {SLOPE_RULE}" in proc.stdout
        assert "Memory: leak" in proc.stdout
    else:
        assert slope["passed"] is True


def test_a_soak_too_short_for_a_verdict_warns_at_start_and_leaves_the_rule_not_judged(tmp_path):
    run_dir = tmp_path / "run"
    proc = _soak(run_dir, 0.0, "6s", "--threshold", SLOPE_RULE)
    assert proc.returncode == OK, proc.stderr[-3000:]
    assert "soak verdict needs >= 600 s" in proc.stderr
    assert _thresholds(run_dir)[SLOPE_RULE]["passed"] is None
    assert f"threshold not judged (no data): {SLOPE_RULE}" in proc.stdout
