"""Benchmark, run by hand: what a workload costs the load generator.

1. Prompt generation: one 8K-token chat request drawn from a synthetic workload (a slice of the pool,
   cut to the calibrated size, its numbered tag joined on), and the same with its JSON body encoded.
   Goal: <= 0.2 ms per request.
   Body encoding: an 8K-token chat body with a 6K-token shared prefix (one call; a loop's first
   step offering 4 tool schemas of 150 tokens) encoded as the agent does (agents/wire/request_body.py: the
   prefix and the schemas encoded once per process) against the same body encoded whole, as before.
2. Request rate: the chat agent with a synthetic workload against the fixed-prompt chat agent, the
   simulator at 0 ms TTFT, 100 users, no think time, `locust -f locustfile.py --headless` as a user
   runs it, the two alternated so drift on a shared host hits both. Goal: >= 90 % of the fixed rate.
   `--target fast`: benchmarks/fast_chat.py in place of the simulator (it never parses a body: the
   simulator spends 1.0 ms of CPU reading a 100K-token prompt), pinned to the second core and the load
   generator to the first, so the rate is the load generator's own on one core.
Run: python benchmarks/bench_workload.py [--seconds 20] [--pairs 2] [--input-tokens 2000] [--target fast]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import fast_server  # noqa: E402 - this script's own folder
from locust.env import Environment  # noqa: E402

from agents.calibration import Calibration  # noqa: E402
from agents.gateways.model_call import CallParts  # noqa: E402
from agents.gateways.openai_chat import ChatAgent  # noqa: E402
from agents.loop.agent_loop import CHAT, LoopStep, opening, shared_offer  # noqa: E402
from agents.run_context import new_context  # noqa: E402
from agents.settings import AgentSettings  # noqa: E402
from agents.wire.request_body import Encoded, as_history, dumps, encode_body  # noqa: E402
from agents.workload import AgentWorkload  # noqa: E402
from contract.exit_codes import INVALID_RUN, OK  # noqa: E402
from scenarios.workloads.distributions import Distribution, fixed  # noqa: E402
from scenarios.workloads.settings import WorkloadSettings, read_workload  # noqa: E402

SIM = "--ttft-ms 0 --itl-ms 0 --output-tokens 16"


def generation_us(workload: WorkloadSettings, draws: int = 20_000) -> tuple[float, float]:
    """Median µs of one draw, and of one draw with its chat body JSON-encoded (what httpx sends)."""
    agent = AgentWorkload(workload, 64, "w0/a1", "[agent 1234-1 run 20261201-000000-abcdef]", Calibration())
    draw_s, body_s = [], []
    for _ in range(draws):
        t0 = time.perf_counter()
        draw = agent.next_request("unused")
        t1 = time.perf_counter()
        json.dumps({"model": "m", "messages": list(draw.messages), "max_tokens": draw.max_tokens})
        t2 = time.perf_counter()
        draw_s.append(t1 - t0)
        body_s.append(t2 - t0)
    return statistics.median(draw_s) * 1e6, statistics.median(body_s) * 1e6


def encoding_us(tmp: Path, tools: bool, draws: int = 5000) -> tuple[float, float]:
    """Median µs to encode one chat agent's body (8K tokens, a 6K-token prefix; with `tools`, a new task's
    first step offering 4 schemas) as the agent does, and the same body whole (`dumps`, as before)."""
    offered = "[tools]\ncount = 4\nschema_tokens = 150\n" if tools else ""
    path = tmp / f"encoding-{tools}.toml"
    path.write_text(f'[input]\ndistribution = "fixed"\nmean = 8192\n\n[prefix]\ntokens = 6144\n\n{offered}')
    workload = read_workload(SimpleNamespace(workload_file=str(path)))
    environment = Environment(user_classes=[ChatAgent], host="http://127.0.0.1:9")
    new_context(environment, AgentSettings(run_id="bench", run_dir=tmp, workload=workload))
    agent = ChatAgent(environment)
    loop, step = workload.tool_loop, None
    if loop is not None:
        step = LoopStep(
            1, "t1", loop.tools, None, offer=shared_offer(CHAT, loop.tools, agent.workload.shared.parts)
        )
    kit_s, whole_s = [], []
    for _ in range(draws):
        draw = agent.workload.next_request("unused")
        history = as_history(opening(agent.workload, draw, CHAT)) if loop is not None else None
        body = agent.request_body(CallParts(True, draw, "bench", history, step))
        plain = {k: v.value if isinstance(v, Encoded) else v for k, v in body.items()}
        plain["messages"] = list(body["messages"])
        t0 = time.perf_counter()
        sent = encode_body(body)
        t1 = time.perf_counter()
        whole = dumps(plain)
        t2 = time.perf_counter()
        assert sent == whole, "the body sent is the body encoded whole"
        kit_s.append(t1 - t0)
        whole_s.append(t2 - t1)
    return statistics.median(kit_s) * 1e6, statistics.median(whole_s) * 1e6


@dataclass(frozen=True)
class Plateau:
    """One run's plateau: successful requests per second, the CPU ms per request of the load generator and
    of the simulator (the sampler's readings), and the load generator's peak RSS. The rate moves with what
    else runs on a shared host, the CPU per request much less."""

    rate: float
    loadgen_cpu_ms: float
    target_cpu_ms: float
    loadgen_rss_mib: float


def request_rate(seconds: int, agent: str, *extra: str, host: str | None = None) -> Plateau:
    """A smoke plateau of 100 `agent`s (a locustfile class) with `extra` options, as a user runs it:
    against the embedded simulator, or at `host` with the load generator pinned to the first core."""
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        command = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--headless", agent]
        command += ["--load-profile", "smoke", "--peak-users", "100", "--duration", f"{seconds}s"]
        command += ["--think-time", "0", "--run-dir", str(run_dir), *extra]
        command += ["--host", host] if host else ["--sim-args", SIM]
        pinned = (lambda: os.sched_setaffinity(0, {0})) if host else None
        done = subprocess.run(
            command, cwd=REPO, capture_output=True, text=True, timeout=seconds + 180, preexec_fn=pinned
        )
        # exit 4: the load generator saturated its core, the case this comparison is about
        if done.returncode not in (OK, INVALID_RUN):
            raise SystemExit(f"locust exited {done.returncode}: {done.stderr[-2000:]}")
        rows = _rows(run_dir / "requests.csv")
        samples = _rows(run_dir / "samples.csv")
    ts = sorted(float(r["ts"]) for r in rows if r["ok"] == "1" and r["operation"] == "chat.stream")
    span = ts[-1] - ts[0]
    rate = (len(ts) - 1) / span if span > 0 else 0.0
    inside = [s for s in samples if ts[0] <= float(s["ts"]) <= ts[-1]]
    rss = max((float(s["loadgen_rss_bytes"]) for s in inside if s.get("loadgen_rss_bytes")), default=0.0)
    return Plateau(
        rate,
        _cpu_ms_per_request(inside, "loadgen_cpu_pct", rate),
        _cpu_ms_per_request(inside, "target_cpu_pct", rate),
        rss / 2**20,
    )


def alternated(
    seconds: int, pairs: int, configs: dict[str, tuple[str, ...]], host: str | None = None
) -> dict[str, list[Plateau]]:
    """Run each configuration (its agent class, then its extra options) in turn, `pairs` times, printing
    each run; its runs, per configuration."""
    runs: dict[str, list[Plateau]] = {name: [] for name in configs}
    for _ in range(pairs):
        for name, (agent, *extra) in configs.items():
            run = request_rate(seconds, agent, *extra, host=host)
            runs[name].append(run)
            target = "" if host else f", simulator {run.target_cpu_ms:.2f}"  # a fast target: not sampled
            print(
                f"  {name}: {run.rate:.1f} req/s, load generator {run.loadgen_cpu_ms:.2f} CPU ms/request "
                f"(peak RSS {run.loadgen_rss_mib:.0f} MiB){target} (load average {os.getloadavg()[0]:.2f})"
            )
    return runs


def summed(runs: list[Plateau]) -> tuple[float, float]:
    """A configuration's summed rate and mean load-generator CPU ms per request."""
    return sum(r.rate for r in runs), statistics.mean(r.loadgen_cpu_ms for r in runs)


def _rows(path: Path) -> list[dict]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


def _cpu_ms_per_request(samples: list[dict], column: str, rate: float) -> float:
    values = [float(s[column]) for s in samples if s.get(column)]
    return statistics.mean(values) * 10.0 / rate if values and rate else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--input-tokens", type=int, default=2000)
    parser.add_argument("--target", choices=("sim", "fast"), default="sim")
    args = parser.parse_args()
    print(f"{platform.node()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    for name, workload in (
        ("8K tokens, fixed", WorkloadSettings(input=fixed(8192))),
        (
            "8K tokens, lognormal, 1K-token prefix",
            WorkloadSettings(input=Distribution("lognormal", 8192, 2000), prefix_tokens=1024),
        ),
    ):
        draw_us, body_us = generation_us(workload)
        print(f"generation ({name}): {draw_us:.1f} µs a draw, {body_us:.1f} µs with its JSON body")
    with tempfile.TemporaryDirectory() as tmp:
        for name, tools in (("one call", False), ("a loop's first step, 4 tool schemas", True)):
            kit_us, whole_us = encoding_us(Path(tmp), tools)
            print(
                f"body encoding ({name}, 6K-token prefix): {kit_us:.1f} µs, encoded whole {whole_us:.1f} µs"
            )
    synthetic = ("--input-tokens", str(args.input_tokens))
    configs = {"fixed prompt": ("ChatAgent",), "synthetic": ("ChatAgent", *synthetic)}
    if args.target == "fast":
        with fast_server.running("fast_chat.py", cpu=1) as url:
            runs = alternated(args.seconds, args.pairs, configs, host=url)
    else:
        runs = alternated(args.seconds, args.pairs, configs)
    (fixed_rate, fixed_cpu), (synthetic_rate, synthetic_cpu) = (summed(r) for r in runs.values())
    print(
        f"request rate, 100 users, no think time: synthetic {args.input_tokens} tokens at "
        f"{synthetic_rate / fixed_rate * 100:.0f} % of the fixed prompt's; load generator CPU per request "
        f"{fixed_cpu:.2f} vs {synthetic_cpu:.2f} ms; load average now {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
