"""Benchmark, run by hand: error of the chat agent's time to first token at 100 concurrent streams.

Truth: the simulator's --ttft-ms knob (300 ms). Goal: median error <= 5 ms. The simulator and
Locust share this machine's cores, so the figure is an upper bound on the kit's own error.
Run: python benchmarks/bench_ttft.py [--users 100] [--requests 1000]
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gevent  # noqa: E402
from locust import constant  # noqa: E402
from locust.env import Environment  # noqa: E402

from agents.gateways.openai_chat import ChatAgent  # noqa: E402
from simgateway import launch  # noqa: E402

TTFT_MS = 300


class BenchChatAgent(ChatAgent):
    wait_time = constant(0.2)


def measure(url: str, users: int, wanted: int) -> list[float]:
    env = Environment(user_classes=[BenchChatAgent], host=url)
    errors: list[float] = []

    def on_request(context=None, **_kw):
        record = (context or {}).get("kit_record")
        if record is not None and record.ok and record.ttft_ms is not None:
            errors.append(record.ttft_ms - TTFT_MS)

    env.events.request.add_listener(on_request)
    runner = env.create_local_runner()
    runner.start(users, spawn_rate=users)
    deadline = time.monotonic() + 300
    while len(errors) < wanted and time.monotonic() < deadline:
        gevent.sleep(0.2)
    runner.quit()
    return errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    gateway = launch.start(["--ttft-ms", str(TTFT_MS), "--itl-ms", "20", "--output-tokens", "10"])
    try:
        errors = sorted(measure(gateway.url, args.users, args.requests))
    finally:
        gateway.stop()
    p95 = errors[int(0.95 * (len(errors) - 1))]
    print(f"{platform.node()} {time.strftime('%Y-%m-%d')}: {args.users} concurrent streams, n={len(errors)}")
    print(
        f"TTFT error vs knob: median {statistics.median(errors):+.1f} ms, p95 {p95:+.1f} ms, "
        f"max {errors[-1]:+.1f} ms"
    )


if __name__ == "__main__":
    main()
