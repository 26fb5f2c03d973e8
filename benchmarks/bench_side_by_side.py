"""Benchmark, run by hand: the kit's chat agent beside raw httpx, against the same mock server, closed loop
with no think time, at 10 and 100 concurrent streams (and the kit with --processes 2 at 100).

The mock is the simulator (TTFT 200 ms, a token every 20 ms, 16 tokens: the peers' table in
docs/field-notes.md used the same). Raw httpx is the kit's own client stack without Locust or the kit
(benchmarks/raw_httpx_client.py: sync httpx under gevent, one process, a stream read to its end, TTFT
at the first content chunk). Each
run lasts 30 s; figures come from its steady middle (5 s to 25 s after its first request): TTFT error
against the knob (p50, p95), completed requests per second, and CPU per request of the load generator's
own processes (the Locust master and workers, or the raw client; not the kit's side sampler nor the
mock), read from outside with psutil. The mock's own lateness (when its first token actually left, for its
last 1,000 streams) is printed beside: on a 2-core machine it shares the cores with the load generator.
Run from the repo's root: python benchmarks/bench_side_by_side.py [--seconds 30] [--only kit-c10,...]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pandas as pd
import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from simgateway import launch  # noqa: E402

TTFT_MS, ITL_MS, TOKENS = 200, 20, 16
WINDOW = (5.0, 25.0)  # seconds after the first request: the steady part of a 30 s run
CASES = {  # name: (client, streams, extra Locust arguments)
    "raw-c10": ("raw", 10, ()),
    "kit-c10": ("kit", 10, ()),
    "raw-c100": ("raw", 100, ()),
    "kit-c100": ("kit", 100, ()),
    "kit-c100-processes-2": ("kit", 100, ("--processes", "2")),
}


@dataclass
class Reading:
    name: str
    load_before: str
    n: int
    ttft_p50: float
    ttft_p95: float
    rps: float
    cpu_ms: float
    mock_late_p50: float

    def row(self) -> str:
        figures = f"{self.ttft_p50:+.1f} | {self.ttft_p95:+.1f} | {self.rps:.0f} | {self.cpu_ms:.2f}"
        return f"| {self.name} | {figures} | {self.mock_late_p50:+.1f} | {self.n} | {self.load_before} |"


# ---- the parent: one case ------------------------------------------------------------------------------
def tree_cpu_s(root: psutil.Process) -> float:
    """CPU seconds of the load generator's processes: the root and its children, less the kit's sampler."""
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            if "sampler" in " ".join(proc.cmdline()):
                continue
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            continue
    return total


def watch(popen: subprocess.Popen) -> list[tuple[float, float]]:
    """(epoch time, CPU seconds of its tree) every half second until the process ends."""
    root, readings = psutil.Process(popen.pid), []
    while popen.poll() is None:
        try:
            readings.append((time.time(), tree_cpu_s(root)))
        except psutil.Error:
            pass
        time.sleep(0.5)
    return readings


def cpu_between(readings: list[tuple[float, float]], t0: float, t1: float) -> float:
    def at(t: float) -> float:
        return min(readings, key=lambda r: abs(r[0] - t))[1]

    return at(t1) - at(t0)


def run_case(name: str, url: str, seconds: float, work: Path) -> Reading:
    """One case against a fresh mock; `work` is this case's own (empty) folder."""
    client, streams, extra = CASES[name]
    load_before = open("/proc/loadavg").read().split()[0]
    if client == "raw":
        out = work / f"{name}.jsonl"
        cmd = [sys.executable, str(REPO / "benchmarks" / "raw_httpx_client.py"), url, str(streams)]
        popen = subprocess.Popen([*cmd, str(seconds), str(out)], cwd=REPO)
        readings = watch(popen)
        rows = pd.read_json(out, lines=True)
    else:
        run_dir = work / name
        args = ["--host", url, "--load-profile", "manual", "-u", str(streams), "-r", str(streams)]
        args += ["-t", f"{seconds:g}s", "--run-dir", str(run_dir), *extra]
        locust = [sys.executable, "-m", "locust", "-f", "examples/closed_loop.py", "--headless"]
        popen = subprocess.Popen([*locust, "ClosedLoopChatAgent", *args], cwd=REPO, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        readings = watch(popen)
        rows = pd.read_csv(run_dir / "requests.csv")
        rows = rows[rows["ok"] == 1]
    start = float(rows["ts"].min())
    t0, t1 = start + WINDOW[0], start + WINDOW[1]
    steady = rows[(rows["ts"] >= t0) & (rows["ts"] + rows["latency_ms"] / 1000.0 <= t1)]
    errors = steady["ttft_ms"] - TTFT_MS
    streams_log = httpx.get(f"{url}/v1/sim/streams").json()["streams"]
    late = [s["first_token_ms"] - TTFT_MS for s in streams_log]
    return Reading(
        name,
        load_before,
        len(steady),
        float(errors.median()),
        float(errors.quantile(0.95)),
        len(steady) / (t1 - t0),
        cpu_between(readings, t0, t1) * 1000.0 / max(len(steady), 1),
        statistics.median(late) if late else float("nan"),
    )


HEADER = (
    "| run | TTFT error p50 (ms) | p95 | req/s | CPU per request (ms) | mock late p50 (ms) | n | load avg |"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated cases: " + ", ".join(CASES))
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M")
    print(f"{platform.node()}, {os.cpu_count()} cores, {started}: closed loop, no think time; mock TTFT")
    print(
        f"{TTFT_MS} ms, {TOKENS} tokens {ITL_MS} ms apart; {args.seconds:g} s per run (load avg: before it)\n"
    )
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|")
    knobs = ["--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--output-tokens", str(TOKENS)]
    with tempfile.TemporaryDirectory(prefix="bench-side-by-side-") as work:
        for i, name in enumerate(args.only.split(",")):
            gateway = launch.start(knobs)
            try:
                folder = Path(work) / str(i)
                folder.mkdir()
                print(run_case(name, gateway.url, args.seconds, folder).row(), flush=True)
            finally:
                gateway.stop()


if __name__ == "__main__":
    main()
