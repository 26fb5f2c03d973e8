"""Benchmark, run by hand: the sampler service's cost per sample and per pulled row, and the kit's
requests per second for 1 process vs master + 1 and 2 workers, with each process's CPU: on one machine
(`--processes`), and in separate network namespaces (gateway, master, workers each in its own, joined
by veth pairs as in tests/netns.py; needs root, else that part is skipped with its reason).

Not part of the test suite; prints numbers for README.md. Run: python benchmarks/bench_remote.py
Loads only 127.0.0.1 or the private addresses of the namespaces it creates (a simulator started here),
each run bounded by its --duration.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import pandas as pd  # noqa: E402
import pytest  # noqa: E402  (tests/netns.py skips through pytest when namespaces are not permitted)

from contract.child_env import kit_module_env  # noqa: E402
from lifecycle.target import free_port, simulator_command, start_simulator, stop_target  # noqa: E402
from sampler.loop import Sampler  # noqa: E402
from sampler.options import SamplerOptions  # noqa: E402
from sampler.row_buffer import RowBuffer  # noqa: E402
from sampler.serve import ServiceState, make_server  # noqa: E402
from sampler.service_client import ServiceClient  # noqa: E402
from tests.netns import Host, lan  # noqa: E402

TOKEN = "bench-token-0123456789"
LOCUST = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py")]
NS_GATEWAY_PORT, NS_BUS_PORT = 18080, 5557  # inside private namespaces: nothing else holds them
RUN_S = 20
ARRIVALS_PER_S = 400


def service_costs(target_pid: int) -> dict:
    """ms per sample into the service's buffer, and ms per row served over HTTP (1000-row pages)."""
    rows = RowBuffer(keep=100_000)
    sampler = Sampler(SamplerOptions(out="", pids=[target_pid], interval=1.0), sink=rows)
    times = []
    for _ in range(2000):
        start = time.perf_counter()
        sampler.tick()
        times.append(time.perf_counter() - start)
    server = make_server(ServiceState(TOKEN, rows, "bench", 1.0), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = ServiceClient(f"http://127.0.0.1:{server.server_address[1]}", TOKEN, time.time)
    start, cursor = time.perf_counter(), 0
    while cursor < 2000:
        cursor = client.rows(cursor, limit=1000).next
    pull_s = time.perf_counter() - start
    offset = client.clock_offset()
    server.shutdown()
    return {
        "sample_ms_median": round(statistics.median(times) * 1000, 3),
        "pull_ms_per_row": round(pull_s * 1000 / 2000, 4),
        "clock_rtt_ms": round(offset.rtt_s * 1000, 2),
    }


def kit_argv(url: str, run_dir: Path, *extra: str) -> list[str]:
    """An open-model run asking more than one process can give (ARRIVALS_PER_S, 60 agents, no think
    time)."""
    argv = [*LOCUST, "--headless", "ChatAgent"]
    argv += ["--host", url, "--load-profile", "smoke", "--peak-users", "60", "--duration", f"{RUN_S}s"]
    argv += ["--arrival-rate", str(ARRIVALS_PER_S), "--max-agents", "60"]
    return [*argv, "--run-dir", str(run_dir), *extra]


def locust_run(url: str, run_dir: Path, *extra: str) -> dict:
    subprocess.run(
        kit_argv(url, run_dir, *extra), cwd=REPO, capture_output=True, timeout=RUN_S + 120, check=False
    )
    return result(run_dir)


def result(run_dir: Path) -> dict:
    """req/s, dropped arrivals (the shortfall) and CPU p90 per process."""
    stats = pd.read_csv(run_dir / "locust_stats.csv")
    total = stats.loc[stats["Name"] == "Aggregated"].iloc[0]
    meta = json.loads((run_dir / "run.json").read_text())
    validity = meta.get("validity", {})
    return {
        "req_per_s": round(float(total["Request Count"]) / RUN_S, 1),
        "dropped_arrivals": meta.get("open_model", {}).get("dropped_arrivals"),
        "cpu_p90_by_process": validity.get("processes") or {"single": validity.get("loadgen_cpu_p90")},
    }


def ns_locust_run(hosts: dict[str, Host], url: str, run_dir: Path, workers: int) -> dict:
    """The same run with the master in namespace `lg` and its workers in `wk` (1 process: in `lg`)."""
    lg, wk = hosts["lg"], hosts["wk"]
    bus = ["--master-bind-host", lg.address, "--master-bind-port", str(NS_BUS_PORT)]
    extra = ["--master", "--expect-workers", str(workers), *bus] if workers else []
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    quiet = {"cwd": REPO, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    kit = subprocess.Popen(lg.command(kit_argv(url, run_dir, *extra)), **quiet)
    worker = [*LOCUST, "--worker", "--master-host", lg.address, "--master-port", str(NS_BUS_PORT)]
    started = [subprocess.Popen(wk.command(worker), **quiet) for _ in range(workers)]
    try:
        kit.wait(RUN_S + 120)
    finally:
        for proc in [kit, *started]:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    return result(run_dir)


def namespaces(knobs: str, tmp: Path) -> None:
    """Gateway, master and workers in three namespaces of their own."""
    try:
        with lan("gw", "lg", "wk") as hosts:
            gw = hosts["gw"]
            sim = [*simulator_command(NS_GATEWAY_PORT, knobs), "--bind", gw.address]
            gateway = subprocess.Popen(
                gw.command(sim), stdout=subprocess.PIPE, text=True, env=kit_module_env()
            )
            try:
                assert "listening" in (gateway.stdout.readline() if gateway.stdout else "")
                for workers in (0, 1, 2):
                    label = f"master + {workers} worker(s)" if workers else "1 process"
                    url = f"http://{gw.address}:{NS_GATEWAY_PORT}"
                    print("namespaces:", label, ns_locust_run(hosts, url, tmp / f"ns{workers}", workers))
            finally:
                gateway.kill()
                gateway.wait()
    except pytest.skip.Exception as why:
        print("namespaces: skipped:", why)


def main() -> None:
    print(f"{platform.node()}: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    port = free_port()
    knobs = "--ttft-ms 0 --itl-ms 0 --output-tokens 2"
    target = start_simulator(port, knobs)
    try:
        print("sampler service:", service_costs(target.pid))
        with tempfile.TemporaryDirectory() as tmp:
            for workers in (0, 1, 2):
                args: tuple[str, ...] = ()
                if workers:
                    bus = str(free_port())
                    args = ("--processes", str(workers), "--master-bind-port", bus, "--master-port", bus)
                label = f"master + {workers} worker(s)" if workers else "1 process"
                print(label, locust_run(target.url, Path(tmp) / str(workers), *args))
            namespaces(knobs, Path(tmp))
    finally:
        stop_target(target)


if __name__ == "__main__":
    main()
