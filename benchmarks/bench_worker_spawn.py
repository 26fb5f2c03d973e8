"""Benchmark, run by hand: a Locust worker's CPU per spawn message with the kit's options, Locust alone
(an argument-parser build per option) vs with the kit's cache (kit/worker_spawn.py).

A real master and worker (Locust's runners over loopback) in this process; the message is the one a
master sends (its parsed options). Run from the repo's root: python benchmarks/bench_worker_spawn.py
"""

from gevent import monkey

monkey.patch_all()

import os  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from locust import argument_parser  # noqa: E402
from locust.env import Environment  # noqa: E402
from locust.rpc import Message  # noqa: E402

from agents.gateways.openai_chat import ChatAgent  # noqa: E402
from kit import options as kit_options  # noqa: E402
from kit import worker_spawn  # noqa: E402
from lifecycle.target import free_port  # noqa: E402
from scenarios import registry  # noqa: E402

MESSAGES = 20


def kit_parsed_options():
    parser = argument_parser.get_empty_argument_parser(default_config_files=[])
    argument_parser.setup_parser_arguments(parser)
    kit_options.add_arguments(parser)
    registry.add_arguments(parser)
    return parser.parse_args([])


def spawn_message(users: int) -> Message:
    job = {
        "timestamp": time.time(),
        "host": "http://127.0.0.1:9",
        "stop_timeout": None,
        "user_classes_count": {},
        "parsed_options": vars(kit_parsed_options()) | {"peak_users": str(users)},
    }
    return Message("spawn", job, "master")


def cpu_ms_per_message(worker) -> list[float]:
    """CPU ms of this process for each of MESSAGES spawn messages (built beforehand)."""
    messages = [spawn_message(n) for n in range(MESSAGES)]
    took = []
    for message in messages:
        started = time.process_time()
        worker.handle_message(message)
        took.append((time.process_time() - started) * 1000.0)
    return took


def main() -> None:
    port = free_port()
    master = Environment(user_classes=[ChatAgent], parsed_options=kit_parsed_options()).create_master_runner(
        "127.0.0.1", port
    )
    worker = Environment(user_classes=[ChatAgent], parsed_options=kit_parsed_options()).create_worker_runner(
        "127.0.0.1", port
    )
    options = len(vars(kit_parsed_options()))
    load = open("/proc/loadavg").read().split()[0]
    alone = cpu_ms_per_message(worker)
    worker_spawn.install()
    cached = cpu_ms_per_message(worker)
    worker.quit()
    master.quit()
    print(f"{platform.node()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d %H:%M')}, load avg {load}:")
    print(f"a worker's CPU per spawn message, {options} options (Locust's and the kit's), n={MESSAGES}")
    print(f"  Locust 2.47 alone:      median {statistics.median(alone):7.1f} ms, max {max(alone):7.1f} ms")
    print(f"  with kit/worker_spawn:  median {statistics.median(cached):7.2f} ms, max {max(cached):7.2f} ms")


if __name__ == "__main__":
    main()
