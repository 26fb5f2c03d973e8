"""Benchmark: a 250-agent capacity run through a spec file (examples/specs/rest-sessions.toml) against the
REST test gateway at ~45 ms start-up, one fresh Locust process, against a budget of 60 s wall.

Usage: python benchmarks/bench_capacity_spec.py [--startup-ms 45] [--keep DIR]  (exit 0 within budget)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.capacity import capacity_result  # noqa: E402
from analysis.load import load_run  # noqa: E402
from lifecycle.target import free_port, start_target, stop_target  # noqa: E402

AGENTS = 250
BUDGET_S = 60.0
SERVER = ROOT / "tests" / "gateways" / "rest_sessions.py"
SPEC = ROOT / "examples" / "specs" / "rest-sessions.toml"


def run(run_dir: Path, startup_ms: float) -> float:
    port = free_port()
    server = [
        sys.executable,
        str(SERVER),
        "--port",
        str(port),
        "--session-mib",
        "4",
        "--startup-ms",
        str(startup_ms),
    ]
    gateway = start_target(server, f"http://127.0.0.1:{port}", "/healthz")
    command = [
        *(sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless", "--load-profile", "capacity"),
        *("--run-dir", str(run_dir), "--gateway", f"spec:{SPEC}", "--host", gateway.url),
        *("--target-pid", str(gateway.pid), "--memory-budget", "8GiB", "--max-agents", str(AGENTS)),
    ]
    started = time.monotonic()
    try:
        subprocess.run(
            command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=BUDGET_S * 5
        )
        return time.monotonic() - started
    finally:
        stop_target(gateway)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--startup-ms", type=float, default=45.0)
    p.add_argument("--keep", type=Path, default=None)
    args = p.parse_args()
    run_dir = args.keep or Path(tempfile.mkdtemp(prefix="bench-capacity-spec-"))
    wall = run(run_dir, args.startup_ms)
    frame = load_run(run_dir).capacity
    result = capacity_result(frame) if frame is not None else None
    agents = result.agents_ready if result else 0
    p50 = result.startup.get("p50") if result and result.startup.get("n") else float("nan")
    marginal = result.marginal_mib if result and result.fit else float("nan")
    print(
        f"capacity through a spec file: {agents} agents (start-up knob {args.startup_ms:g} ms, "
        f"p50 {p50:.1f} ms, {marginal:.3f} MiB/agent) in {wall:.1f} s wall, closes included; "
        f"budget {BUDGET_S:.0f} s"
    )
    return 0 if agents >= AGENTS and wall <= BUDGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
