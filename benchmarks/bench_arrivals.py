"""Benchmark, run by hand: does the open model keep its schedule at 200 arrivals/s on one process?

The kit as a user runs it (`locust -f locustfile.py --headless`, no workers) paces ARRIVALS per second for
DURATION against the simulator; every arrival's first request records its start lateness (sent minus
due). Goal: p95 start lateness <= 10 ms. Two agents: SessionAgent (one small JSON request per
arrival: the pacing's own cost) and ChatAgent (a short stream per arrival). The simulator and Locust share
this machine's cores, and so do other users: beside the figures, the load average before and after, the
Locust process's own loop lag over the arrivals' seconds (benchmarks/loop_lag.py: a greenlet sleeping
5 ms at a time, how late it wakes: what no pacer inside that process gets under), and the machine's
wake-up delay (a bare process doing the same).
Run: python benchmarks/bench_arrivals.py [--rate 200] [--duration 30s] [--agents 200] [--arrivals constant]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from contract.units import parse_duration  # noqa: E402

PROBE = """
import statistics, sys, time
late, end = [], time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    t0 = time.perf_counter(); time.sleep(0.005); late.append((time.perf_counter() - t0 - 0.005) * 1000)
q = statistics.quantiles(late, n=100)
print(f"{q[49]:.2f} {q[94]:.2f}")
"""
AGENTS = {
    "SessionAgent": "--agent-startup-ms 0 --agent-mib 0 --first-agent-mib 0",
    "ChatAgent": "--ttft-ms 5 --itl-ms 1 --output-tokens 4",
}


def run(agent: str, args: argparse.Namespace, run_dir: Path) -> dict:
    files = f"{REPO / 'locustfile.py'},{REPO / 'benchmarks' / 'loop_lag.py'}"
    command = [
        *(sys.executable, "-m", "locust", "-f", files, "--headless"),
        *("--run-dir", str(run_dir), agent, "--load-profile", "smoke", "--duration", args.duration),
        *("--arrival-rate", str(args.rate), "--max-agents", str(args.agents), "--arrivals", args.arrivals),
        *("--sim-args", AGENTS[agent], "--stop-timeout", "5"),
    ]
    before = os.getloadavg()[0]
    probe = subprocess.Popen(
        [sys.executable, "-c", PROBE, str(parse_duration(args.duration) + 5)],
        stdout=subprocess.PIPE,
        text=True,
    )
    lag_file = run_dir.parent / f"{agent}-loop-lag.json"
    env = os.environ | {"LOOP_LAG_OUT": str(lag_file)}
    subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    after = os.getloadavg()[0]
    wake_p50, wake_p95 = probe.communicate(timeout=120)[0].split()
    meta = json.loads((run_dir / "run.json").read_text())
    lateness = pd.read_csv(run_dir / "requests.csv")["start_lateness_ms"].dropna()
    arrivals = meta.get("open_model", {})
    start = arrivals["start_ts"]
    lag = pd.DataFrame(json.loads(lag_file.read_text()), columns=["ts", "ms"])
    lag = lag.loc[(lag["ts"] >= start) & (lag["ts"] < start + parse_duration(args.duration)), "ms"]
    return {
        "agent": agent,
        "arrivals": int(lateness.size),
        "dropped": arrivals.get("dropped_arrivals"),
        "lateness p50 (ms)": round(lateness.quantile(0.5), 2),
        "p95 (ms)": round(lateness.quantile(0.95), 2),
        "p99 (ms)": round(lateness.quantile(0.99), 2),
        "late > 100 ms": int((lateness > 100).sum()),
        "loop lag p50/p95 (ms)": f"{lag.quantile(0.5):.2f} / {lag.quantile(0.95):.2f}",
        "loadgen CPU p90 (%)": (meta.get("validity") or {}).get("loadgen_cpu_p90"),
        "machine wake-up p50/p95 (ms)": f"{wake_p50} / {wake_p95}",
        "load avg before/after": f"{before:.1f} / {after:.1f}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--duration", default="30s")
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--arrivals", default="constant", choices=("constant", "poisson", "gamma"))
    parser.add_argument("--agent", choices=tuple(AGENTS), default=None, help="one agent only")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="scores-bench-") as tmp:
        for agent in [args.agent] if args.agent else AGENTS:
            rows.append(run(agent, args, Path(tmp) / agent))
    print(f"{args.rate:g} {args.arrivals} arrivals/s for {args.duration}, {args.agents} agents, one process:")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
