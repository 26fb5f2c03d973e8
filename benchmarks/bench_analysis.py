"""Benchmark: analyse a synthetic 24-hour soak run (86,400 samples, 1,000,000 requests) and write its
report, in a child process, against the budget of 8 s and 1 GiB. Builds its own data; judges nothing else.

Usage: python benchmarks/bench_analysis.py [--keep DIR]   (exit 0 within budget, 1 over it)
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.synthetic import T0, soak_samples, stream_requests, write_run_dir  # noqa: E402

DAY_S = 86_400
BUDGET_S = 8.0
BUDGET_BYTES = 1024**3


def build(path: Path) -> Path:
    meta = {
        "run_id": "bench-soak-24h",
        "profile": {"name": "soak", "phases": [{"name": "plateau", "start_ts": T0, "end_ts": T0 + DAY_S}]},
        "start_ts": T0,
        "end_ts": T0 + DAY_S,
        "stop_reason": "profile complete",
        "exit_code": 0,
    }
    return write_run_dir(
        path,
        meta,
        samples=soak_samples(DAY_S, 1.0, leak_mib_per_h=5.0),
        requests=stream_requests(1_000_000, DAY_S, users=50),
    )


def measure(run_dir: Path) -> tuple[float, int]:
    """Wall seconds and peak RSS bytes of `python -m analysis RUN_DIR` in a fresh interpreter."""
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "analysis", str(run_dir)], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - start
    return wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux reports KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the run directory here and keep it")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = build(ns.keep or Path(tmp) / "run")
        sizes = {p.name: p.stat().st_size for p in run_dir.glob("*.csv")}
        wall, peak = measure(run_dir)
    ok = wall < BUDGET_S and peak < BUDGET_BYTES
    print(f"files: {', '.join(f'{k} {v / 1e6:.0f} MB' for k, v in sizes.items())}")
    print(
        f"analysis + report: {wall:.1f} s (budget {BUDGET_S:.0f} s), peak RSS {peak / 1024**2:.0f} MiB "
        f"(budget {BUDGET_BYTES / 1024**3:.0f} GiB): {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
