"""Benchmark: analyse a synthetic 24-hour soak run (86,400 samples, 1,000,000 requests) and write its
report, in a child process, against the budget of 8 s and 1 GiB, and against 3x one pandas read of its two
CSVs (timed in a fresh interpreter of its own, in the same run, so a busy host slows both alike). Then each
stage's cost, in the order the report computes them (a table computed once is paid by the first stage
that asks it), so a section added later cannot hide a regression. Builds its own data.

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
READS_GOAL = 3.0  # the analysis within this many times one read of its two CSVs
ONE_READ = "import sys, pandas as pd; [pd.read_csv(p) for p in sys.argv[1:]]"


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


def one_read(run_dir: Path) -> float:
    """Wall seconds of one pandas read of samples.csv and requests.csv in a fresh interpreter."""
    start = time.perf_counter()
    csvs = [str(run_dir / "samples.csv"), str(run_dir / "requests.csv")]
    subprocess.run([sys.executable, "-c", ONE_READ, *csvs], check=True)
    return time.perf_counter() - start


def stage_costs(run_dir: Path) -> list[tuple[str, float]]:
    """Seconds per stage of `python -m analysis`, in its order: the read, each section, plots, summary."""
    from analysis import report
    from analysis.knee import load_levels, time_bins
    from analysis.load import load_run
    from analysis.report import build_sections, extra_sections
    from analysis.summary import console_summary
    from analysis.summary_json import summary

    costs: list[tuple[str, float]] = []

    def timed(name, func, *args):
        start = time.perf_counter()
        answer = func(*args)
        costs.append((name, time.perf_counter() - start))
        return answer

    run = timed("read (load_run)", load_run, run_dir)
    bins = timed("time bins", time_bins, run)
    for func in report.EXTRA_SECTIONS:
        timed(f"section: {func.__name__}", extra_sections, run, [func])
    levels = load_levels(bins) if bins is not None else None
    timed("the other sections", build_sections, run, bins, levels)
    with tempfile.TemporaryDirectory() as out:
        timed("plots and files (write_report)", report.write_report, run, report.DEFAULT_WARNING_BYTES, out)
    timed("summary.json", summary, run)
    timed("console summary", console_summary, run)
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="build the run directory here and keep it")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = build(ns.keep or Path(tmp) / "run")
        sizes = {p.name: p.stat().st_size for p in run_dir.glob("*.csv")}
        wall, peak = measure(run_dir)
        read_s = one_read(run_dir)
        costs = stage_costs(run_dir)
    ok = wall < BUDGET_S and peak < BUDGET_BYTES and wall <= READS_GOAL * read_s
    print(f"files: {', '.join(f'{k} {v / 1e6:.0f} MB' for k, v in sizes.items())}")
    print(
        f"analysis + report: {wall:.1f} s (budget {BUDGET_S:.0f} s), peak RSS {peak / 1024**2:.0f} MiB "
        f"(budget {BUDGET_BYTES / 1024**3:.0f} GiB); one read {read_s:.1f} s, so {wall / read_s:.1f}x "
        f"(goal {READS_GOAL:g}x): {'PASS' if ok else 'FAIL'}"
    )
    print("stage costs (in-process, the report's order):")
    for name, seconds in costs:
        print(f"  {seconds:6.2f} s  {name}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
