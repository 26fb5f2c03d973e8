"""Benchmark, run by hand: what each step of a long-context agent loop costs the load generator.

One looping chat agent, a 100,000-token prompt (400 KB), the simulator at 0 ms TTFT answering 7 steps
with a tool call and the 8th with text: the load generator's own CPU per model call (`time.process_time`
around it: encoding the body, sending it, reading the stream), by step. With the history encoded as it
grows (agents/wire/request_body.py) and, for comparison, encoded whole each step (a plain list, as before).
Goal: step 8 at <= 1.5x the client CPU of step 1.
Run: python benchmarks/bench_loop_history.py [--tasks 5] [--prompt-tokens 100000]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from locust.env import Environment  # noqa: E402

from agents.gateways.openai_chat import ChatAgent  # noqa: E402
from agents.loop import agent_loop  # noqa: E402
from agents.run_context import new_context  # noqa: E402
from agents.settings import AgentSettings  # noqa: E402
from kit.rows import RowRecorder  # noqa: E402
from lifecycle.target import free_port, start_simulator, stop_target  # noqa: E402
from scenarios.workloads.settings import read_workload  # noqa: E402

STEPS = 8
LOOP = f"[tools]\ncount = 4\nschema_tokens = 150\nresult = 100\n\n[loop]\nmax_steps = {STEPS + 2}\n"


class TimedChat(ChatAgent):
    abstract = True
    cpu_ms: dict[int, list[float]]

    def model_call(self, draw, history, step):
        started = time.process_time()
        try:
            return super().model_call(draw, history, step)
        finally:
            self.cpu_ms.setdefault(step.number, []).append((time.process_time() - started) * 1000.0)


def cpu_by_step(url: str, tmp: Path, prompt: str, tasks: int) -> dict[int, float]:
    """Median CPU ms of each step over `tasks` tasks of one agent."""
    (tmp / "loop.toml").write_text(LOOP)
    workload = read_workload(SimpleNamespace(workload_file=str(tmp / "loop.toml")))
    run_dir = Path(tempfile.mkdtemp(dir=tmp))
    environment = Environment(user_classes=[TimedChat], host=url)
    new_context(environment, AgentSettings(run_id="bench", run_dir=run_dir, workload=workload, prompt=prompt))
    recorder = RowRecorder(environment, run_dir)
    user = TimedChat(environment)
    user.cpu_ms = {}
    user.on_start()
    try:
        for _ in range(tasks):
            user.chat_stream()
    finally:
        user.on_stop()
        recorder.close()
    return {step: statistics.median(ms) for step, ms in sorted(user.cpu_ms.items())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=5)
    parser.add_argument("--prompt-tokens", type=int, default=100_000)
    args = parser.parse_args()
    prompt = ("a long shared context " * (args.prompt_tokens * 4 // 22 + 1))[: args.prompt_tokens * 4]
    print(f"{platform.node()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    port = free_port()
    sim = f"--ttft-ms 0 --itl-ms 0 --output-tokens 16 --tool-call-steps {STEPS - 1}"
    target = start_simulator(port, sim)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            grown = cpu_by_step(target.url, Path(tmp), prompt, args.tasks)
            agent_loop.as_history = list  # type: ignore[assignment]  # the whole history encoded each step
            whole = cpu_by_step(target.url, Path(tmp), prompt, args.tasks)
    finally:
        stop_target(target)
    for name, ms in (("encoded as it grows", grown), ("encoded whole each step", whole)):
        steps = ", ".join(f"{step}: {value:.2f}" for step, value in ms.items())
        print(f"{name}: CPU ms per step {steps}; step {STEPS} / step 1 = {ms[STEPS] / ms[1]:.2f}")
    print(f"load average now {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
