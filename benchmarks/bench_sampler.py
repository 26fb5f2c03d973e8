"""Benchmark, run by hand: cost of one sample (RSS + CPU) of a 50-process tree, sampler vs `ps` per pid.

Goal: <= 1 ms per sample and >= 10x cheaper than `ps -o rss= -p PID` per process (the study).
Not part of the test suite; prints numbers for docs/sampler.md. Run: python benchmarks/bench_sampler.py
"""

from __future__ import annotations

import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil

from sampler.targets import ProcessTreeTarget

TREE = """
import os, sys, time
for _ in range(49):
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
print("ready", flush=True)
sys.stdin.readline()
"""


def per_call_ms(fn: Callable[[], object], repeat: int) -> float:
    """Median of `repeat` timed calls, in ms (median: the machine is shared and noisy)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def ps_per_process(pids: list[int]) -> None:
    for pid in pids:
        subprocess.run(["ps", "-o", "rss=,time=", "-p", str(pid)], capture_output=True, check=False)


def main() -> None:
    root = subprocess.Popen(
        [sys.executable, "-c", TREE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        assert root.stdout.readline().strip() == b"ready"
        target = ProcessTreeTarget(root.pid, tree_refresh_s=3600)
        pids = sorted(target.pids)
        assert len(pids) == 50, len(pids)
        ours = per_call_ms(target.read, 500)
        refresh = per_call_ms(target.refresh, 50)
        ps_cost = per_call_ms(lambda: ps_per_process(pids), 5)
        ps_eo = per_call_ms(lambda: subprocess.run(["ps", "-eo", "pid,rss,time"], capture_output=True), 20)
        pss = per_call_ms(lambda: target.read(with_pss=True), 20)
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        root.wait()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"machine: {platform.machine()}, {psutil.cpu_count()} cores, load {load}, {platform.platform()}")
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python {platform.python_version()}")
    print(f"processes in tree:                     {len(pids)}")
    print(f"sampler read (RSS + CPU), cached fds:  {ours:8.3f} ms / sample")
    print(f"process-set refresh (tree walk):       {refresh:8.3f} ms / refresh (every --tree-refresh-s)")
    print(f"sampler read with PSS/USS:             {pss:8.3f} ms / sample (every --pss-every readings)")
    print(f"`ps -o rss=,time= -p PID` x {len(pids)}:        {ps_cost:8.1f} ms / sample")
    print(f"one `ps -eo pid,rss,time`:             {ps_eo:8.1f} ms / sample")
    print(f"sampler is {ps_cost / ours:,.0f}x cheaper than ps per process; goal <= 1 ms: {ours <= 1.0}")


if __name__ == "__main__":
    main()
