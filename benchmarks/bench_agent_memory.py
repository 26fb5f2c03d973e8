"""Benchmark, run by hand: the load generator's own memory per simulated agent, for the kinds
a capacity plan needs: an idle session agent, a chat agent between its requests (the fixed prompt, 300 s
think time), and a looping agent holding a 100,000-token history mid-loop (past its first step, in a tool
run that outlasts the run). Each is one Locust process of N agents beside one of 50, against the
simulator; the difference of their RSS (from /proc, once every agent has had its first answer) per agent.
The test suite holds the idle agent and a 20,000-token looping agent to their bars
(tests/kit/test_kit_agent_memory.py, whose runs this reuses); this measures the long history too.
Run: python benchmarks/bench_agent_memory.py [--kinds idle,chat,loop]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.kit.test_kit_agent_memory import FEW, ended, kit_run, loop_workload, settled_rss_kib  # noqa: E402

HISTORY_TOKENS = 100_000
SIM = "--ttft-ms 5 --itl-ms 1 --output-tokens 2"


def kinds(tmp: Path) -> dict[str, tuple[int, tuple[str, ...], str, float]]:
    """Each kind's agent count, Locust arguments, simulator arguments and seconds to spawn them."""
    workload = tmp / "loop.toml"
    workload.write_text(loop_workload(HISTORY_TOKENS))
    return {
        "idle": (1000, ("SessionAgent", "-r", "500", "-t", "45s", "--think-time", "300s"), SIM, 20),
        "chat": (1000, ("ChatAgent", "-r", "500", "-t", "45s", "--think-time", "300s"), SIM, 20),
        "loop": (
            500,
            ("ChatAgent", "--workload", str(workload), "-r", "50", "-t", "40s", "--stop-timeout", "2"),
            "--ttft-ms 5 --itl-ms 1 --tool-call-steps 2",
            30,
        ),
    }


def per_agent_kib(tmp: Path, name: str, many: int, args: tuple[str, ...], sim: str, spawn_s: float):
    """RSS of a run of 50 and of `many` agents of one kind side by side, and the difference per agent."""
    with (
        kit_run(tmp / f"{name}-few", FEW, *args, sim=sim, spawn_s=spawn_s) as few_run,
        kit_run(tmp / f"{name}-many", many, *args, sim=sim, spawn_s=spawn_s) as many_run,
    ):
        few, most = settled_rss_kib(few_run), settled_rss_kib(many_run)
        for code, stderr in (ended(few_run), ended(many_run)):
            if code != 0:
                raise SystemExit(f"{name}: locust exited {code}: {stderr}")
    return few, most, (most - few) / (many - FEW)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="idle,chat,loop")
    args = parser.parse_args()
    print(f"{platform.node()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        table = kinds(Path(tmp))
        for name in args.kinds.split(","):
            many, locust_args, sim, spawn_s = table[name]
            few, most, per_agent = per_agent_kib(Path(tmp), name, many, locust_args, sim, spawn_s)
            print(
                f"{name}: {FEW} agents {few / 1024:.1f} MiB, {many} agents {most / 1024:.1f} MiB: "
                f"{per_agent:.1f} KiB per agent (load average {os.getloadavg()[0]:.2f})"
            )


if __name__ == "__main__":
    main()
