"""Benchmark, run by hand: the kit's chat agent beside raw httpx and AIPerf, against the same mock server,
closed loop with no think time, at 10, 100 and 500 concurrent streams (the kit with --processes 2 at 100
and 500) and with 8K- and 100K-token prompts at 100 streams (the kit with --input-tokens N, the others the
same-sized text of benchmarks/side_by_side_prompt.py; the mock's count of what came is printed beside).

The mock is the simulator (TTFT 200 ms, a token every 20 ms, 16 tokens: the peers' table in
docs/field-notes.md used the same). Raw httpx is the kit's own client stack without Locust or the kit
(benchmarks/raw_httpx_client.py: sync httpx under gevent, one process, its body encoded once, a stream
read to its end, TTFT at the first content chunk). AIPerf (NVIDIA's, `aiperf profile --concurrency N`, its
default workers, TTFT from its own per-request records) runs from a venv of its own, outside the repo and
CI, made once with: python -m venv .venv-peers && .venv-peers/bin/pip install aiperf (or --peers-venv DIR);
without it its cases are left out. inference-perf needs Python >= 3.12 (this machine's is 3.11). Each run
lasts --seconds (30 by default); figures come from its steady middle (5 s after its first request to 5 s
before its end): TTFT error against the knob (p50, p95), completed requests per second, and CPU per
request of the load generator's own processes (the Locust master and workers, the raw client, AIPerf's
services; not the kit's side sampler nor the mock), read from outside with psutil. The mock's own
lateness (when its first token actually left, for its last 1,000 streams) is printed beside: on a 2-core
machine it shares the cores with the load generator, as does the load average (read before each case) of
whatever else runs.
Run from the repo's root: python benchmarks/bench_side_by_side.py [--seconds 30] [--only kit-c10,...]
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
from dataclasses import dataclass
from pathlib import Path

import httpx
import pandas as pd
import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from side_by_side_prompt import TOKENIZER_SCRIPT, prompt_text  # noqa: E402 - this script's own folder

from simgateway import launch  # noqa: E402

TTFT_MS, ITL_MS, TOKENS = 200, 20, 16
EDGE_S = 5.0  # left out at each end of a run (ramp-up, the last answers): the rest is its steady part


@dataclass(frozen=True)
class Case:
    client: str  # "raw", "kit" or "aiperf" (CLIENTS)
    streams: int
    prompt_tokens: int = 0  # 0: the client's fixed one-sentence prompt
    extra: tuple[str, ...] = ()  # more Locust arguments (the kit's)


TWO = ("--processes", "2")
CASES = {  # the clients alternate, so a change in the shared machine's load hits each
    "raw-c10": Case("raw", 10),
    "kit-c10": Case("kit", 10),
    "aiperf-c10": Case("aiperf", 10),
    "raw-c100": Case("raw", 100),
    "kit-c100": Case("kit", 100),
    "kit-c100-processes-2": Case("kit", 100, extra=TWO),
    "aiperf-c100": Case("aiperf", 100),
    "raw-c500": Case("raw", 500),
    "kit-c500-processes-2": Case("kit", 500, extra=TWO),
    "aiperf-c500": Case("aiperf", 500),
    "raw-c100-8k": Case("raw", 100, 8_000),
    "kit-c100-8k": Case("kit", 100, 8_000),
    "aiperf-c100-8k": Case("aiperf", 100, 8_000),
    "raw-c100-100k": Case("raw", 100, 100_000),
    "kit-c100-100k": Case("kit", 100, 100_000),
    "aiperf-c100-100k": Case("aiperf", 100, 100_000),
}


Run = tuple[pd.DataFrame, list[tuple[float, float]]]  # a client's requests (ts, ttft_ms, latency_ms), its CPU


@dataclass
class Reading:
    name: str
    load_before: str
    n: int
    ttft_p50: float
    ttft_p95: float
    rps: float
    cpu_ms: float
    mock_late_p50: float
    prompt_tokens: float  # the mock's own count, median of its recent calls: both clients sent this size

    def row(self) -> str:
        figures = f"{self.ttft_p50:+.1f} | {self.ttft_p95:+.1f} | {self.rps:.0f} | {self.cpu_ms:.2f}"
        mock = f"{self.mock_late_p50:+.1f} | {self.prompt_tokens:,.0f}"
        return f"| {self.name} | {figures} | {mock} | {self.n} | {self.load_before} |"


# ---- the parent: one case ------------------------------------------------------------------------------
def tree_cpu_s(root: psutil.Process) -> float:
    """CPU seconds of the load generator's processes: the root and its children, less the kit's sampler."""
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        try:
            if "sampler" in " ".join(proc.cmdline()):
                continue
            times = proc.cpu_times()
            total += times.user + times.system
        except psutil.Error:
            continue
    return total


def watch(popen: subprocess.Popen) -> list[tuple[float, float]]:
    """(epoch time, CPU seconds of its tree) every half second until the process ends."""
    root, readings = psutil.Process(popen.pid), []
    while popen.poll() is None:
        try:
            readings.append((time.time(), tree_cpu_s(root)))
        except psutil.Error:
            pass
        time.sleep(0.5)
    return readings


def cpu_between(readings: list[tuple[float, float]], t0: float, t1: float) -> float:
    def at(t: float) -> float:
        return min(readings, key=lambda r: abs(r[0] - t))[1]

    return at(t1) - at(t0)


def run_raw(case: Case, url: str, seconds: float, work: Path, peers: Path) -> Run:
    out = work / "raw.jsonl"
    cmd = [sys.executable, str(REPO / "benchmarks" / "raw_httpx_client.py"), url, str(case.streams)]
    readings = watch(subprocess.Popen([*cmd, str(seconds), str(out), str(case.prompt_tokens)], cwd=REPO))
    return pd.read_json(out, lines=True), readings


def run_kit(case: Case, url: str, seconds: float, work: Path, peers: Path) -> Run:
    run_dir, users = work / "kit", str(case.streams)
    args = ["--host", url, "--load-profile", "manual", "-u", users, "-r", users, "-t", f"{seconds:g}s"]
    args += ["--run-dir", str(run_dir), *case.extra]
    args += ["--input-tokens", str(case.prompt_tokens)] if case.prompt_tokens else []
    locust = [sys.executable, "-m", "locust", "-f", "examples/closed_loop.py", "--headless"]
    popen = subprocess.Popen([*locust, "ClosedLoopChatAgent", *args], cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    readings = watch(popen)
    rows = pd.read_csv(run_dir / "requests.csv")
    return rows[rows["ok"] == 1], readings


def run_aiperf(case: Case, url: str, seconds: float, work: Path, peers: Path) -> Run:
    """AIPerf's closed loop (--concurrency) sending the raw client's prompt from an input file, with a
    tokeniser made here (it has none offline); its own records give TTFT (first content token)."""
    tokenizer, prompts, out = work / "tokenizer", work / "prompt.jsonl", work / "aiperf"
    subprocess.run(
        [peers / "bin" / "python", "-c", TOKENIZER_SCRIPT, tokenizer], check=True, capture_output=True
    )
    prompts.write_text(json.dumps({"text": prompt_text(case.prompt_tokens)}) + "\n")
    args = ["--model", "m", "--tokenizer", str(tokenizer), "--url", url, "--endpoint-type", "chat"]
    args += ["--streaming", "--concurrency", str(case.streams), "--benchmark-duration", f"{seconds:g}"]
    args += ["--input-file", str(prompts), "--custom-dataset-type", "single_turn", "--osl", "64"]
    args += ["--use-legacy-max-tokens", "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"]
    popen = subprocess.Popen([peers / "bin" / "aiperf", "profile", *args, "--artifact-dir", str(out)],
                             cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    readings = watch(popen)
    records = [json.loads(line) for line in (out / "profile_export.jsonl").read_text().splitlines()]
    rows = [
        {
            "ts": r["metadata"]["request_start_ns"] / 1e9,
            "ttft_ms": r["metrics"]["time_to_first_token"]["value"],
            "latency_ms": r["metrics"]["request_latency"]["value"],
        }
        for r in records
        if "time_to_first_token" in r["metrics"]
    ]
    return pd.DataFrame(rows), readings


CLIENTS = {"raw": run_raw, "kit": run_kit, "aiperf": run_aiperf}


def run_case(name: str, url: str, seconds: float, work: Path, peers: Path) -> Reading:
    """One case against a fresh mock; `work` is this case's own (empty) folder."""
    case = CASES[name]
    load_before = open("/proc/loadavg").read().split()[0]
    rows, readings = CLIENTS[case.client](case, url, seconds, work, peers)
    start = float(rows["ts"].min())
    t0, t1 = start + EDGE_S, start + seconds - EDGE_S
    steady = rows[(rows["ts"] >= t0) & (rows["ts"] + rows["latency_ms"] / 1000.0 <= t1)]
    errors = steady["ttft_ms"] - TTFT_MS
    streams_log = httpx.get(f"{url}/v1/sim/streams").json()["streams"]
    late = [s["first_token_ms"] - TTFT_MS for s in streams_log]
    prompts = [c["prompt_tokens"] for c in httpx.get(f"{url}/v1/sim/calls").json()["calls"]]
    return Reading(
        name,
        load_before,
        len(steady),
        float(errors.median()),
        float(errors.quantile(0.95)),
        len(steady) / (t1 - t0),
        cpu_between(readings, t0, t1) * 1000.0 / max(len(steady), 1),
        statistics.median(late) if late else float("nan"),
        statistics.median(prompts) if prompts else float("nan"),
    )


HEADER = (
    "| run | TTFT error p50 (ms) | p95 | req/s | CPU per request (ms) | mock late p50 (ms) | prompt tokens "
    "| n | load avg |"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help=f"per run, more than {2 * EDGE_S:g}")
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated cases: " + ", ".join(CASES))
    parser.add_argument(
        "--peers-venv", type=lambda p: Path(p).resolve(), default=REPO / ".venv-peers", help="where AIPerf is"
    )
    args = parser.parse_args()
    names = args.only.split(",")
    unknown = [name for name in names if name not in CASES]
    if unknown or args.seconds <= 2 * EDGE_S:
        parser.error(f"unknown case {unknown[0]}" if unknown else f"--seconds must exceed {2 * EDGE_S:g}")
    if not (args.peers_venv / "bin" / "aiperf").exists():
        print(f"no AIPerf in {args.peers_venv} (see this script's docstring): its cases are left out\n")
        names = [name for name in names if CASES[name].client != "aiperf"]
    started = time.strftime("%Y-%m-%d %H:%M")
    print(f"{platform.node()}, {os.cpu_count()} cores, {started}: closed loop, no think time; mock TTFT")
    print(
        f"{TTFT_MS} ms, {TOKENS} tokens {ITL_MS} ms apart; {args.seconds:g} s per run (load avg: before it)\n"
    )
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|")
    knobs = ["--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--output-tokens", str(TOKENS)]
    with tempfile.TemporaryDirectory(prefix="bench-side-by-side-") as work:
        for i, name in enumerate(names):
            gateway = launch.start(knobs)
            try:
                folder = Path(work) / str(i)
                folder.mkdir()
                print(run_case(name, gateway.url, args.seconds, folder, args.peers_venv).row(), flush=True)
            finally:
                gateway.stop()


if __name__ == "__main__":
    main()
