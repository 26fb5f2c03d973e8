"""End to end with real processes: a process leaking in 1 MiB blocks with churn (tests/fixtures/leaker.py)
as --target-pid behind a real soak is judged "leak" and fails memory_leak == 0 (exit 99); the simulator
soaked with no leak knob is not, at the shortest soak the kit allows (~22 minutes:
benchmarks/bench_soak_verdict.py runs both, results in docs/analysis.md). Here the rule's span is 20 s at
0.25 s samples and the leak 10 MiB/s with 0-3 MiB of churn every 0.5 s: the same rule on the same
staircase in seconds. (The steady simulator is no part of it: 25 s of a starting server is its warm-up.)
"""

from __future__ import annotations

import pytest

from contract.exit_codes import OK, THRESHOLD_FAILED, THRESHOLDS_UNJUDGED
from tests.leak_soaks import soaks

pytestmark = pytest.mark.e2e

GATES = ("memory_leak == 0",)
FAST = ("--trend-min-duration", "20", "--sample-interval", "0.25", "--ramp", "1s")


def test_a_leaking_process_behind_a_real_soak_fails_the_leak_gate(tmp_path):
    with soaks(tmp_path, "25s", 36000.0, ("1", "3", "0.5"), *FAST, names=("leak",), gates=GATES) as results:
        leak = results["leak"]
    memory = leak["soak"]["target RSS"]
    assert leak["code"] == THRESHOLD_FAILED, leak["stdout"][-3000:]
    assert memory["verdict"] == "leak" and memory["slope_per_h"] == pytest.approx(36000, rel=0.3)
    assert memory["detectable_per_h"] < 36000 / 4
    assert "THRESHOLD FAILED: memory_leak == 0" in leak["stdout"]


def test_the_same_process_churning_without_a_leak_is_never_called_a_leak(tmp_path):
    """0-3 MiB held and freed every 0.5 s, nothing kept: no leak; at 20 s the run may not see a small
    one, so the gate passes (no evidence) or is not judged (cannot tell, exit 8), never fails."""
    with soaks(tmp_path, "25s", 0.0, ("1", "3", "0.5"), *FAST, names=("leak",), gates=GATES) as results:
        churn = results["leak"]
    memory = churn["soak"]["target RSS"]
    assert memory["verdict"] in ("no evidence of leak", "cannot tell at this length"), memory
    assert churn["code"] == (OK if memory["verdict"] == "no evidence of leak" else THRESHOLDS_UNJUDGED)
