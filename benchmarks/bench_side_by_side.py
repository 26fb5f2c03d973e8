"""Benchmark, run by hand: the kit's chat agent beside raw httpx and the peers, against the same mock server,
closed loop with no think time, at 10, 100 and 500 concurrent streams (the kit with --processes 2 at 100 and
500, and with --processes -1, a worker a core, at 500) and with 8K- and 100K-token prompts at 100 streams
(the kit with --input-tokens N, raw httpx and AIPerf the same-sized text of benchmarks/side_by_side_prompt.py;
the mock's count of what came is printed beside).

The mock is the simulator (TTFT 200 ms, a token every 20 ms, 16 tokens: the peers' table in
docs/field-notes.md used the same). Raw httpx is the kit's own client stack without Locust or the kit
(benchmarks/raw_httpx_client.py: sync httpx under gevent, one process, its body encoded once, a stream
read to its end, TTFT at the first content chunk). The peers send the raw client's prompt as streamed chat
completions, each with its default workers and a word-level tokeniser made here (they count tokens with a
Hugging Face one and have none offline); TTFT is from each one's own per-request records, to the first
content token:
- AIPerf 0.13.0 (NVIDIA's): `aiperf profile --concurrency N`, the prompt as its input file.
- GuideLLM 0.8.1 (vLLM's): `guidellm run --scenario FILE`, profile concurrent (N streams) for --seconds
  (max_duration), the prompt as a JSON Lines file of twice the rows the loop can use (it stops when they run
  out). Its TTFT starts when the request's headers are sent (httpx's trace hook), after any connect.
- inference-perf 0.7.0 (kubernetes-sigs'): a YAML config, load type concurrent at N. That load sends a fixed
  count: what N streams complete in --seconds at the knobs (0.5 s a request), and 10 % more; a saturated
  client runs longer. The prompt is a one-turn ShareGPT file (its reader wants two turns: the second is an
  empty assistant one). Its clock is time.perf_counter (CLOCK_MONOTONIC, shared by all processes on Linux),
  turned into epoch seconds here.
They run from venvs of their own, outside the repo and CI, made once with: python -m venv .venv-peers &&
.venv-peers/bin/pip install aiperf guidellm (or --peers-venv DIR); inference-perf needs Python >= 3.12:
python3.12 -m venv .venv-peers312 && .venv-peers312/bin/pip install inference-perf (or --peers312-venv DIR).
A peer missing from its venv is left out.
Each run lasts --seconds (30 by default); figures come from its steady middle (5 s after its first request to
5 s before its end): TTFT error against the knob (p50, p95), completed requests per second, and CPU per
request of the load generator's own processes (the Locust master and workers, the raw client, the peers'
processes; not the kit's side sampler nor the mock), read from outside with psutil. The mock's own
lateness (when its first token actually left, for its last 1,000 streams) is printed beside: on a 2-core
machine it shares the cores with the load generator, as does the load average (read before each case) of
whatever else runs.
Run from the repo's root: python benchmarks/bench_side_by_side.py [--seconds 30] [--only kit-c10,...]
"""

from __future__ import annotations

import argparse
import json
import math
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
# one request at the knobs, 0.5 s: a stream's cycle in a closed loop
REQUEST_S = (TTFT_MS + (TOKENS - 1) * ITL_MS) / 1000.0


@dataclass(frozen=True)
class Case:
    client: str  # "raw", "kit", "aiperf", "infperf" or "guidellm" (CLIENTS)
    streams: int
    prompt_tokens: int = 0  # 0: the client's fixed one-sentence prompt
    extra: tuple[str, ...] = ()  # more Locust arguments (the kit's)


TWO, ALL = ("--processes", "2"), ("--processes", "-1")  # -1: a Locust worker a core
CASES = {  # the clients alternate, so a change in the shared machine's load hits each
    "raw-c10": Case("raw", 10),
    "kit-c10": Case("kit", 10),
    "aiperf-c10": Case("aiperf", 10),
    "infperf-c10": Case("infperf", 10),
    "guidellm-c10": Case("guidellm", 10),
    "raw-c100": Case("raw", 100),
    "kit-c100": Case("kit", 100),
    "kit-c100-processes-2": Case("kit", 100, extra=TWO),
    "aiperf-c100": Case("aiperf", 100),
    "infperf-c100": Case("infperf", 100),
    "guidellm-c100": Case("guidellm", 100),
    "raw-c500": Case("raw", 500),
    "kit-c500-processes-2": Case("kit", 500, extra=TWO),
    "kit-c500-processes-all": Case("kit", 500, extra=ALL),
    "aiperf-c500": Case("aiperf", 500),
    "infperf-c500": Case("infperf", 500),
    "guidellm-c500": Case("guidellm", 500),
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
    prompt_tokens: float  # the mock's own count, median of its recent calls: what the client sent

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


def run_raw(case: Case, url: str, seconds: float, work: Path, venv: Path) -> Run:
    out = work / "raw.jsonl"
    cmd = [sys.executable, str(REPO / "benchmarks" / "raw_httpx_client.py"), url, str(case.streams)]
    readings = watch(subprocess.Popen([*cmd, str(seconds), str(out), str(case.prompt_tokens)], cwd=REPO))
    return pd.read_json(out, lines=True), readings


def run_kit(case: Case, url: str, seconds: float, work: Path, venv: Path) -> Run:
    run_dir, users = work / "kit", str(case.streams)
    args = ["--host", url, "--load-profile", "manual", "-u", users, "-r", users, "-t", f"{seconds:g}s"]
    args += ["--run-dir", str(run_dir), *case.extra]
    args += ["--input-tokens", str(case.prompt_tokens)] if case.prompt_tokens else []
    locust = [sys.executable, "-m", "locust", "-f", "examples/closed_loop.py", "--headless"]
    popen = subprocess.Popen([*locust, "ClosedLoopChatAgent", *args], cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)  # fmt: skip
    readings = watch(popen)
    rows = pd.read_csv(run_dir / "requests.csv", low_memory=False)
    return rows[rows["ok"] == 1], readings


def make_tokenizer(venv: Path, work: Path) -> Path:
    """A word-level tokeniser in `work`, made by the peer's own python: the peers count tokens with a Hugging
    Face tokeniser and have none offline."""
    folder = work / "tokenizer"
    subprocess.run([venv / "bin" / "python", "-c", TOKENIZER_SCRIPT, folder], check=True, capture_output=True)
    return folder


def run_peer(cmd: list, work: Path, output: Path, offline: bool = True) -> list[tuple[float, float]]:
    """Run a peer in `work` (Hugging Face's caches there, offline unless told, its output in peer.log),
    watching its CPU; fail with the log's last line if it wrote no `output`."""
    env = {**os.environ, "HF_HOME": str(work / "hf")}
    env |= {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"} if offline else {}
    with (work / "peer.log").open("w") as log:
        readings = watch(subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT))
    if not output.exists():
        last = (work / "peer.log").read_text().strip().splitlines()[-1:]
        raise RuntimeError(f"{Path(cmd[0]).name} wrote no {output.name}: {last}")
    return readings


def run_aiperf(case: Case, url: str, seconds: float, work: Path, venv: Path) -> Run:
    """AIPerf's closed loop (--concurrency) sending the raw client's prompt from an input file; its own
    records give TTFT (first content token). Not offline: with HF_HUB_OFFLINE set, AIPerf 0.13.0 looks for a
    tokeniser folder in the hub's cache, and fails."""
    tokenizer, prompts, out = make_tokenizer(venv, work), work / "prompt.jsonl", work / "aiperf"
    prompts.write_text(json.dumps({"text": prompt_text(case.prompt_tokens)}) + "\n")
    args = ["--model", "m", "--tokenizer", str(tokenizer), "--url", url, "--endpoint-type", "chat"]
    args += ["--streaming", "--concurrency", str(case.streams), "--benchmark-duration", f"{seconds:g}"]
    args += ["--input-file", str(prompts), "--custom-dataset-type", "single_turn", "--osl", "64"]
    args += ["--use-legacy-max-tokens", "--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"]
    records_file = out / "profile_export.jsonl"
    cmd = [venv / "bin" / "aiperf", "profile", *args, "--artifact-dir", str(out)]
    readings = run_peer(cmd, work, records_file, offline=False)
    records = [json.loads(line) for line in records_file.read_text().splitlines()]
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


def closed_loop_requests(case: Case, seconds: float, margin: float) -> int:
    """What `case.streams` streams complete in `seconds` at the knobs, times `margin`."""
    return math.ceil(margin * case.streams * seconds / REQUEST_S)


def infperf_config(case: Case, url: str, seconds: float, work: Path, venv: Path) -> dict:
    """inference-perf's config: streamed chat, load concurrent at N for a fixed count, the prompt as a
    ShareGPT file, a per-request report with its computed metrics."""
    dataset = work / "sharegpt.json"
    turns = [{"from": "human", "value": prompt_text(case.prompt_tokens)}, {"from": "gpt", "value": ""}]
    dataset.write_text(json.dumps([{"conversations": turns}]))  # its reader skips a conversation of one turn
    stage = {"num_requests": closed_loop_requests(case, seconds, 1.1), "concurrency_level": case.streams}
    fields = {"request": False, "response": False, "info": False, "computed_metrics": True}
    lifecycle = {"summary": False, "per_stage": False, "per_request": True, "per_request_fields": fields}
    return {
        "api": {"type": "chat", "streaming": True},
        "server": {"type": "vllm", "model_name": "m", "base_url": url},
        "tokenizer": {"pretrained_model_name_or_path": str(make_tokenizer(venv, work))},
        "data": {"type": "shareGPT", "path": str(dataset)},
        "load": {"type": "concurrent", "stages": [stage]},
        "report": {"request_lifecycle": lifecycle, "prometheus": None},
        "storage": {"local_storage": {"path": str(work / "infperf")}},
    }


def run_inference_perf(case: Case, url: str, seconds: float, work: Path, venv: Path) -> Run:
    """inference-perf's concurrent load (infperf_config); its per-request report gives TTFT (first content
    chunk) and latency, on time.perf_counter's clock (CLOCK_MONOTONIC) turned into epoch seconds."""
    config = work / "infperf.yaml"
    config.write_text(json.dumps(infperf_config(case, url, seconds, work, venv)))  # JSON is YAML
    records_file = work / "infperf" / "per_request_lifecycle_metrics.json"
    readings = run_peer([venv / "bin" / "inference-perf", "--config_file", str(config)], work, records_file)
    to_epoch = time.time() - time.monotonic()
    records = [r for r in json.loads(records_file.read_text()) if r["error"] is None]
    rows = [
        {
            "ts": r["start_time"] + to_epoch,
            "ttft_ms": r["computed_metrics"]["time_to_first_token"] * 1000.0,
            "latency_ms": r["computed_metrics"]["request_latency"] * 1000.0,
        }
        for r in records
        if r["computed_metrics"]["time_to_first_token"] is not None
    ]
    return pd.DataFrame(rows), readings


def guidellm_scenario(case: Case, url: str, seconds: float, work: Path, venv: Path) -> dict:
    """GuideLLM's scenario: streamed chat, profile concurrent at N for `seconds`, the prompt as JSON Lines
    rows (twice what the loop can use: it stops when they run out), every request's stats in its JSON."""
    prompts = work / "prompts.jsonl"
    row = json.dumps({"prompt": prompt_text(case.prompt_tokens)}) + "\n"
    prompts.write_text(row * closed_loop_requests(case, seconds, 2.0))
    backend = {"kind": "openai_http", "target": url, "model": "m", "request_format": "/v1/chat/completions"}
    spec = {
        "backend": {**backend, "stream": True},
        "profile": {"kind": "concurrent", "streams": case.streams},
        "constraints": [{"kind": "max_duration", "seconds": seconds}],
        "tokenizer": {"kind": "huggingface_auto", "model": str(make_tokenizer(venv, work))},
        "data": [{"kind": "json_file", "path": str(prompts)}],
        "outputs": [{"kind": "json", "path": str(work / "guidellm.json")}],
        "metrics": {"kind": "generative", "sample_size": 0},  # 0: no prompt or output text, stats kept
    }
    return {"spec": spec}


def run_guidellm(case: Case, url: str, seconds: float, work: Path, venv: Path) -> Run:
    """GuideLLM's concurrent profile (guidellm_scenario); its own records give TTFT to the first content
    token (time_to_first_output_token_ms) and latency, in epoch seconds."""
    scenario, out = work / "scenario.json", work / "guidellm.json"
    scenario.write_text(json.dumps(guidellm_scenario(case, url, seconds, work, venv)))
    cmd = [venv / "bin" / "guidellm", "run", "--scenario", str(scenario), "--disable-console"]
    readings = run_peer(cmd, work, out)
    records = json.loads(out.read_text())["benchmarks"][0]["requests"]["successful"]
    rows = [
        {
            "ts": r["request_start_time"],
            "ttft_ms": r["time_to_first_output_token_ms"],
            "latency_ms": r["request_latency"] * 1000.0,
        }
        for r in records
        if r["time_to_first_output_token_ms"] is not None
    ]
    return pd.DataFrame(rows), readings


CLIENTS = {
    "raw": run_raw,
    "kit": run_kit,
    "aiperf": run_aiperf,
    "infperf": run_inference_perf,
    "guidellm": run_guidellm,
}
PEERS = {  # a peer's client: its name, its binary, the option that names its venv
    "aiperf": ("AIPerf", "aiperf", "peers_venv"),
    "infperf": ("inference-perf", "inference-perf", "peers312_venv"),
    "guidellm": ("GuideLLM", "guidellm", "peers_venv"),
}


def run_case(name: str, url: str, seconds: float, work: Path, venv: Path) -> Reading:
    """One case against a fresh mock; `work` is this case's own (empty) folder."""
    case = CASES[name]
    load_before = open("/proc/loadavg").read().split()[0]
    rows, readings = CLIENTS[case.client](case, url, seconds, work, venv)
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


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help=f"per run, more than {2 * EDGE_S:g}")
    parser.add_argument("--only", default=",".join(CASES), help="comma-separated cases: " + ", ".join(CASES))
    for option, peers in (("peers", "AIPerf's and GuideLLM's"), ("peers312", "inference-perf's")):
        default = REPO / f".venv-{option}"
        parser.add_argument(
            f"--{option}-venv", type=lambda p: Path(p).resolve(), default=default, help=f"{peers} venv"
        )
    args = parser.parse_args()
    unknown = [name for name in args.only.split(",") if name not in CASES]
    if unknown or args.seconds <= 2 * EDGE_S:
        parser.error(f"unknown case {unknown[0]}" if unknown else f"--seconds must exceed {2 * EDGE_S:g}")
    return args


def client_venvs(args: argparse.Namespace) -> dict[str, Path]:
    """The venv each client runs from (raw httpx and the kit: this one); a peer missing from its venv is left
    out, with a line that says so."""
    venvs = {"raw": Path(sys.prefix), "kit": Path(sys.prefix)}
    for client, (name, binary, option) in PEERS.items():
        venv = getattr(args, option)
        if (venv / "bin" / binary).exists():
            venvs[client] = venv
        else:
            print(f"no {name} in {venv} (see this script's docstring): its cases are left out")
    if len(venvs) < len(CLIENTS):
        print()
    return venvs


def main() -> None:
    args = parse_args()
    venvs = client_venvs(args)
    names = [name for name in args.only.split(",") if CASES[name].client in venvs]
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
                venv = venvs[CASES[name].client]
                print(run_case(name, gateway.url, args.seconds, folder, venv).row(), flush=True)
            finally:
                gateway.stop()


if __name__ == "__main__":
    main()
