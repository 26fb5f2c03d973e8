"""Benchmark, run by hand: `mcp.tools_call` through the kit (`--gateway mcp`, Locust as a user runs it)
beside a raw httpx JSON-RPC client (sync httpx under gevent, one process, no Locust, no kit: POST
tools/call, read the answer to its end), both at 0 ms tool latency, the same concurrency, no think time,
alternated raw/kit/raw so drift on a shared host hits both.

The target (`--target`): `simulator`, the simulator's MCP endpoint (the SDK's server, ~200 calls/s on a
shared core: its rate, not the kit's), or `fast`, benchmarks/fast_mcp.py, fixed JSON answers at some tens
of microseconds a call, so the load generator is the bottleneck and the rate is the kit's own ceiling.

Prints per run: tools/call per second over its steady middle, latency p50/p95, and the client process's
CPU over that middle (% of one core, ms per call, read from /proc by psutil); then the kit's added
latency per call (kit p50 - raw p50). The goal: within 1 ms of raw, >= 500 calls/s from one process.
The target shares the machine's cores with the client.
Run from the repo's root: python benchmarks/bench_mcp.py [--target fast] [--seconds 20] [--sessions 10]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import fast_server  # noqa: E402 - this script's own folder

from simgateway import launch  # noqa: E402

CPU_POLL_S = 0.25  # how often the client process's CPU time is read while it runs

RAW = """
from gevent import monkey; monkey.patch_all()
import json, sys, time
import gevent, httpx
URL, SESSIONS, SECONDS, OUT = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
H = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
def answer(response):
    if response.headers.get("content-type", "").startswith("application/json"):
        return json.loads(response.read())
    found = None
    for line in response.iter_lines():  # to the end: a stream left unread would close its connection
        if line.startswith("data:"):
            found = json.loads(line[5:])
    return found
def session(end, rows):
    with httpx.Client(base_url=URL, timeout=30) as c:
        info = {"name": "raw", "version": "1"}
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
        first = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
        r = c.post("/mcp", headers=H, json=first)
        h = {**H, "Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        c.post("/mcp", headers=h, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        n = 0
        while time.monotonic() < end:
            n += 1
            call = {"name": "search", "arguments": {"query": f"raw {n}"}}
            ts, sent = time.time(), time.perf_counter()
            message = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call}
            with c.stream("POST", "/mcp", headers=h, json=message) as resp:
                assert "result" in answer(resp)
            rows.append({"ts": ts, "latency_ms": (time.perf_counter() - sent) * 1000.0})
        c.delete("/mcp", headers=h)
rows = []
end = time.monotonic() + SECONDS
gevent.joinall([gevent.spawn_later(i / SESSIONS, session, end, rows) for i in range(SESSIONS)])
open(OUT, "w").write(json.dumps(rows))
"""


@dataclass(frozen=True)
class Figures:
    """One run's steady middle: calls/s, latency p50/p95 (ms), the client's CPU (% of one core), calls
    that failed (counted in the rate: a rate of errors would be no figure)."""

    rate: float
    p50: float
    p95: float
    cpu_pct: float
    failed: int

    @property
    def cpu_ms_per_call(self) -> float:
        return self.cpu_pct * 10.0 / self.rate


def cpu_samples(cmd: list[str]) -> list[tuple[float, float]]:
    """Run `cmd` to its end, reading its CPU time (user + system, seconds) every CPU_POLL_S: (time, cpu)."""
    process = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    watched, samples = psutil.Process(process.pid), []
    while process.poll() is None:
        try:
            times = watched.cpu_times()
        except psutil.NoSuchProcess:
            break
        samples.append((time.time(), times.user + times.system))
        time.sleep(CPU_POLL_S)
    _, stderr = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"{cmd[2]} exited {process.returncode}: {stderr.decode()[-1500:]}")
    return samples


def cpu_share(samples: list[tuple[float, float]], start: float, end: float) -> float:
    """% of one core the process used between two times (the samples nearest inside them)."""
    inside = [s for s in samples if start <= s[0] <= end]
    (t0, c0), (t1, c1) = inside[0], inside[-1]
    return 100.0 * (c1 - c0) / (t1 - t0)


def steady(rows: pd.DataFrame, seconds: float, samples: list[tuple[float, float]]) -> Figures:
    """The middle of the run (its first and last 20 % dropped)."""
    start = rows["ts"].min()
    low, high = start + 0.2 * seconds, start + 0.8 * seconds
    middle = rows[(rows["ts"] >= low) & (rows["ts"] <= high)]
    latency = middle["latency_ms"]
    p95 = statistics.quantiles(latency, n=20)[-1]
    failed = int((~middle["ok"].astype(bool)).sum()) if "ok" in middle else 0  # raw asserts each answer
    cpu = cpu_share(samples, low, high)
    return Figures(len(middle) / (0.6 * seconds), latency.median(), p95, cpu, failed)


def raw_run(url: str, sessions: int, seconds: float, tmp: Path) -> Figures:
    out = tmp / "raw.json"
    samples = cpu_samples([sys.executable, "-c", RAW, url, str(sessions), str(seconds), str(out)])
    return steady(pd.DataFrame(json.loads(out.read_text())), seconds, samples)


def kit_run(url: str, sessions: int, seconds: float, tmp: Path, n: int) -> Figures:
    run_dir = tmp / f"kit-{n}"
    profile = ("--load-profile", "smoke", "--peak-users", str(sessions), "--duration", f"{seconds:g}s")
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--headless"]
    cmd += ["--run-dir", str(run_dir), "--gateway", "mcp", "--host", url, *profile, "--think-time", "0"]
    samples = cpu_samples(cmd)
    rows = pd.read_csv(run_dir / "requests.csv")
    return steady(rows[rows["operation"] == "mcp.tools_call"], seconds, samples)


@contextmanager
def target(kind: str) -> Iterator[str]:
    if kind == "fast":
        with fast_server.running("fast_mcp.py") as url:
            yield url
    else:
        with launch.running(["--mcp-preload", "--mcp-tool-ms", "0"]) as sim:
            yield sim.url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=("simulator", "fast"), default="simulator")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--sessions", type=int, default=10)
    args = parser.parse_args()
    print(f"{platform.node()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}, {args.target}")
    results: dict[str, list[Figures]] = {"raw": [], "kit": []}
    with tempfile.TemporaryDirectory() as tmp, target(args.target) as url:
        for n, kind in enumerate(("raw", "kit", "raw", "kit")):
            if kind == "raw":
                figures = raw_run(url, args.sessions, args.seconds, Path(tmp))
            else:
                figures = kit_run(url, args.sessions, args.seconds, Path(tmp), n)
            results[kind].append(figures)
            print(
                f"{kind}: {figures.rate:.0f} tools/call per s, p50 {figures.p50:.2f} ms, "
                f"p95 {figures.p95:.2f} ms, CPU {figures.cpu_pct:.0f} % of a core "
                f"({figures.cpu_ms_per_call:.2f} ms per call), {figures.failed} failed"
            )
    raw_p50 = statistics.mean(f.p50 for f in results["raw"])
    kit_p50 = statistics.mean(f.p50 for f in results["kit"])
    kit_rate = statistics.mean(f.rate for f in results["kit"])
    print(
        f"{args.sessions} sessions, 0 ms tools: the kit {kit_rate:.0f} tools/call per s from one process, "
        f"p50 {kit_p50:.2f} ms vs raw {raw_p50:.2f} ms: added {kit_p50 - raw_p50:+.2f} ms per call; "
        f"load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
