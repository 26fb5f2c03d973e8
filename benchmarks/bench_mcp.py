"""Benchmark, run by hand: `mcp.tools_call` through the kit (`--gateway mcp`, Locust as a user runs it)
beside a raw httpx JSON-RPC client (sync httpx under gevent, one process, no Locust, no kit: POST
tools/call, read the SSE answer to its end), both against the simulator's MCP endpoint at 0 ms tool
latency, the same concurrency, no think time, alternated raw/kit/raw so drift on a shared host hits both.

Prints per run: tools/call per second over its steady middle, latency p50/p95; then the kit's added
latency per call (kit p50 - raw p50). Issue 36's goal: within 1 ms of raw, >= 500 calls/s from one process.
The simulator (one Python process, the SDK's server) shares the machine's cores with the client.
Run from the repo's root: python benchmarks/bench_mcp.py [--seconds 20] [--sessions 10]
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
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from simgateway import launch  # noqa: E402

RAW = """
from gevent import monkey; monkey.patch_all()
import json, sys, time
import gevent, httpx
URL, SESSIONS, SECONDS, OUT = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
H = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
def answer(response):
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


def steady(rows: pd.DataFrame, seconds: float) -> tuple[float, float, float]:
    """Calls/s, p50 and p95 over the middle of the run (its first and last 20 % dropped)."""
    start = rows["ts"].min()
    middle = rows[(rows["ts"] >= start + 0.2 * seconds) & (rows["ts"] <= start + 0.8 * seconds)]
    rate = len(middle) / (0.6 * seconds)
    latency = middle["latency_ms"]
    return rate, latency.median(), statistics.quantiles(latency, n=20)[-1]


def raw_run(url: str, sessions: int, seconds: float, tmp: Path) -> pd.DataFrame:
    out = tmp / "raw.json"
    subprocess.run([sys.executable, "-c", RAW, url, str(sessions), str(seconds), str(out)], check=True)
    return pd.DataFrame(json.loads(out.read_text()))


def kit_run(url: str, sessions: int, seconds: float, tmp: Path, n: int) -> pd.DataFrame:
    run_dir = tmp / f"kit-{n}"
    profile = ("--load-profile", "smoke", "--peak-users", str(sessions), "--duration", f"{seconds:g}s")
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--headless"]
    cmd += ["--run-dir", str(run_dir), "--gateway", "mcp", "--host", url, *profile, "--think-time", "0"]
    subprocess.run(cmd, cwd=REPO, check=True, capture_output=True)
    rows = pd.read_csv(run_dir / "requests.csv")
    return rows[rows["operation"] == "mcp.tools_call"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--sessions", type=int, default=10)
    args = parser.parse_args()
    print(f"{platform.node()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    results: dict[str, list[tuple[float, float, float]]] = {"raw": [], "kit": []}
    with tempfile.TemporaryDirectory() as tmp, launch.running(["--mcp-preload", "--mcp-tool-ms", "0"]) as sim:
        for n, kind in enumerate(("raw", "kit", "raw", "kit")):
            if kind == "raw":
                rows = raw_run(sim.url, args.sessions, args.seconds, Path(tmp))
            else:
                rows = kit_run(sim.url, args.sessions, args.seconds, Path(tmp), n)
            figures = steady(rows, args.seconds)
            results[kind].append(figures)
            rate, p50, p95 = figures
            print(f"{kind}: {rate:.0f} tools/call per s, p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    raw_p50 = statistics.mean(f[1] for f in results["raw"])
    kit_p50 = statistics.mean(f[1] for f in results["kit"])
    kit_rate = statistics.mean(f[0] for f in results["kit"])
    print(
        f"{args.sessions} sessions, 0 ms tools: the kit {kit_rate:.0f} tools/call per s from one process, "
        f"p50 {kit_p50:.2f} ms vs raw {raw_p50:.2f} ms: added {kit_p50 - raw_p50:+.2f} ms per call"
    )


if __name__ == "__main__":
    main()
