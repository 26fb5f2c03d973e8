"""Benchmark, run by hand: the looping chat agent's request rate against the plain chat agent's.

The simulator at 0 ms TTFT answers the first 3 steps of each task with a tool call (`--tool-call-steps
3`); the looping agent offers 4 tools of 150 tokens, runs each call instantly (a 100-token result) and
sends the grown history again: 4 model calls a task. The plain agent sends its fixed prompt. 100 users,
no think time, `locust -f locustfile.py --headless` as a user runs it (benchmarks/bench_workload.py's
alternated runs), the two alternated so drift on a shared host hits both. Goal: the looping
agent's model calls per second >= 80 % of the plain agent's requests per second.
Run: python benchmarks/bench_agent_loop.py [--seconds 20] [--pairs 2]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_workload  # its alternated smoke runs of 100 chat agents

LOOP = """[tools]
count = 4
schema_tokens = 150
result = 100

[loop]
max_steps = 10
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=2)
    args = parser.parse_args()
    bench_workload.SIM += " --tool-call-steps 3"  # a plain request offers no tools: answered with text
    print(f"{platform.node()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        workload = Path(tmp) / "loop.toml"
        workload.write_text(LOOP)
        configs = {"plain": ("ChatAgent",), "looping": ("ChatAgent", "--workload", str(workload))}
        runs = bench_workload.alternated(args.seconds, args.pairs, configs)
    (plain_rate, plain_cpu), (loop_rate, loop_cpu) = (bench_workload.summed(r) for r in runs.values())
    print(
        f"request rate, 100 users, no think time: looping agent at {loop_rate / plain_rate * 100:.0f} % of "
        f"the plain agent's; load generator CPU per request {plain_cpu:.2f} vs {loop_cpu:.2f} ms; "
        f"load average now {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
