"""The soak verdict at the shortest soak the kit allows, with real processes (~23 min, run by hand): a
process leaking 120 MiB/h in 1 MiB blocks with 0-3 MiB of churn every 5 s as --target-pid behind a real
soak must be judged "leak" (exit 99); the simulator with no leak knob must not be (exit 0), error drift
judged in both. Prints each verdict, slope, interval and detectable slope. Results: docs/analysis.md.

    python benchmarks/bench_soak_verdict.py [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contract.trend_rule import MIN_DURATION_S, TrendData, clock  # noqa: E402
from tests.leak_soaks import soaks  # noqa: E402

LEAK_MIB_PER_H, SHAPE = 120.0, ("1", "3", "5")
EXPECTED = {"leak": 99, "steady": 0}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="keep the run directories here")
    out = Path(parser.parse_args().out or tempfile.mkdtemp(prefix="soak-verdict-"))
    duration = clock(TrendData(MIN_DURATION_S, 1.0).shortest_run_s)
    print(f"two soaks of {duration} in {out}", flush=True)
    ok = True
    with soaks(out, duration, LEAK_MIB_PER_H, SHAPE) as results:
        for name, r in results.items():
            memory, errors = r["soak"].get("target RSS", {}), r["soak"].get("error rate", {})
            print(
                f"{name}: exit {r['code']} (expected {EXPECTED[name]}); memory {memory.get('verdict')} "
                f"{memory.get('slope_per_h')} MiB/h, interval {memory.get('interval')}, detectable "
                f"{memory.get('detectable_per_h')}; errors {errors.get('verdict')}"
            )
            ok &= r["code"] == EXPECTED[name] and errors.get("verdict") not in (None, "not enough data")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
