"""Benchmark, run by hand: the load generator's CPU per streamed request, where it goes, and how its TTFT
error grows with the streams one process carries.

The kit's closed-loop chat agent (examples/closed_loop.py, one Locust process, run through
benchmarks/gc_probe.py, which times every garbage collection) against the simulator (TTFT 200 ms, a token
every 20 ms, 16 tokens: bench_side_by_side.py's mock), --seconds a run, figures from its steady middle (5 s
in from each end). CPU per request is what holds on a shared machine: the process's user + system CPU
(psutil, read every half second) between two readings, divided by the requests that completed between
them. TTFT error against the knob is wall-clock and moves with whatever else runs: the load average (before
and after the run) and the simulator's own lateness stand beside it. This VM's CPU speed drifts within an
hour: compare a before and an after run at the same time (two of these started together, --kit-root).

--profile DIR records the steady middle with py-spy (requirements-dev.txt) at 50 samples a second with
native frames (so the collector and C code show; at 200 a second its pauses halve the request rate), leaves
out samples caught in the hub's epoll_wait (no CPU), and sorts each sample by the innermost frame of a known
part: the HTTP client, SSE reading, Locust's stats and events, the kit's rows, the agent's own code,
gevent's hub, other threads, GC. --kit-root runs the kit of another source tree (`git archive COMMIT | tar
-x -C DIR`); --client runs a raw client (benchmarks/raw_*_client.py) instead of the kit.
Run from the repo's root:
    python benchmarks/bench_stream_cpu.py [--streams 100] [--runs 2] [--seconds 30] [--profile DIR]
    python benchmarks/bench_stream_cpu.py --streams 10,50,75,100,200      (error vs streams in one process)
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_side_by_side import EDGE_S, ITL_MS, TOKENS, TTFT_MS, watch  # noqa: E402 - this script's own folder

from simgateway import launch  # noqa: E402

PROFILE_HZ = 50
PROFILE_MODE = ("--native",)
AGENT = "ClosedLoopChatAgent"
PROBE = REPO / "benchmarks" / "gc_probe.py"  # examples/closed_loop.py with its collections timed
GC_LOG = "gc.jsonl"  # benchmarks/gc_probe.py's record of the kit's collections
IDLE_FRAMES = ("epoll_wait", "epoll_pwait")  # the event loop waiting for the next socket event
GC_FRAMES = ("gc_collect", "collect_with_callback")  # CPython's collector, wherever it was triggered
PARTS = (  # (part, path fragments of its frames); a sample goes to the innermost frame that matches one
    (
        "HTTP client (httpx and its transport)",
        ("httpx/", "httpcore/", "h11/", "geventhttpclient/", "gevent_transport.py", "llhttp", "_parser.c"),
    ),
    (
        "SSE reading and chunk parsing",
        ("agents/wire/sse.py", "agents/wire/reading.py", "read_stream (", "tool_deltas"),
    ),
    ("the kit's rows and row listeners", ("capture/recorder.py", "contract/", "kit/")),
    ("Locust stats and events", ("locust/stats.py", "locust/event.py")),
    ("the agent's request (body, record, deadline)", ("agents/", "scenarios/")),
    ("Locust runner and user loop", ("locust/",)),
)
HUB = "gevent's hub, sockets and switches with no known caller"  # gevent's frames are not a part's own


@dataclass
class Measurement:
    gc: str  # the collector inside the window (the kit's runs): passes per generation, ms per request, max
    streams: int
    n: int
    rps: float
    cpu_ms: float  # the Locust process's CPU per completed request
    busy: float  # its CPU share of one core over the window
    ttft_p50: float
    ttft_p95: float
    ttft_p99: float
    mock_late: str  # the simulator's own lateness at its first token (p50 / p95 ms of its last streams)
    load: str  # 1-minute load average before and after the run

    def row(self) -> str:
        cpu = f"{self.cpu_ms:.2f} | {self.busy:.0%} | {self.rps:.0f}"
        ttft = f"{self.ttft_p50:+.1f} | {self.ttft_p95:+.1f} | {self.ttft_p99:+.1f}"
        return f"| {self.streams} | {cpu} | {ttft} | {self.mock_late} | {self.gc} | {self.n} | {self.load} |"


HEADER = (
    "| streams | CPU ms / request | of a core | req/s | TTFT error p50 (ms) | p95 | p99 | mock late p50/p95 "
    "| GC passes gen 0/1/2, ms a request, longest | n | load avg |"
)


Rows = Callable[[], pd.DataFrame]


def kit(root: Path, url: str, streams: int, seconds: float, work: Path) -> tuple[list[str], Rows]:
    """The kit of `root` (one Locust process): its command and its completed requests."""
    users = str(streams)
    args = ["--host", url, "--load-profile", "manual", "-u", users, "-r", users, "-t", f"{seconds:g}s"]
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(REPO / "benchmarks" / "gc_probe.py"),
        "--headless",
        AGENT,
    ]

    def rows() -> pd.DataFrame:
        found = pd.read_csv(work / "kit" / "requests.csv")
        return found[found["ok"] == 1]

    return [*cmd, *args, "--run-dir", str(work / "kit")], rows


def raw(script: str) -> Callable[[Path, str, int, float, Path], tuple[list[str], Rows]]:
    """A raw client of benchmarks/ (no Locust, no kit): the floor an HTTP stack sets."""

    def command(root: Path, url: str, streams: int, seconds: float, work: Path) -> tuple[list[str], Rows]:
        out = work / "raw.jsonl"
        cmd = [sys.executable, str(REPO / "benchmarks" / script), url, str(streams), f"{seconds:g}", str(out)]
        return cmd, lambda: pd.read_json(out, lines=True).dropna(subset=["ttft_ms"])

    return command


CLIENTS = {
    "kit": kit,
    "raw-httpx": raw("raw_httpx_client.py"),
    "raw-geventhttpclient": raw("raw_geventhttpclient_client.py"),
}


def run(client: str, root: Path, url: str, streams: int, seconds: float, work: Path, profile: Path | None):
    """One closed-loop run of `client`; its completed requests, the CPU readings of its process, and (with
    `profile`) py-spy's record of the steady middle."""
    cmd, rows = CLIENTS[client](root, url, streams, seconds, work)
    env = {**os.environ, "BENCH_GC_LOG": str(work / GC_LOG)}
    popen = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    timer = None
    if profile is not None:
        spy = ["py-spy", "record", "--pid", str(popen.pid), "--duration", f"{seconds - 2 * EDGE_S - 2:g}"]
        spy += ["--rate", str(PROFILE_HZ), *PROFILE_MODE, "--format", "raw", "-o", str(profile)]
        timer = threading.Timer(EDGE_S + 2, subprocess.run, [spy], {"capture_output": True})
        timer.start()
    readings = watch(popen)
    if timer is not None:
        timer.join()
    return rows(), readings


def measure(
    client: str, root: Path, url: str, streams: int, seconds: float, work: Path, profile: Path | None
) -> Measurement:
    load_before = os.getloadavg()[0]
    rows, readings = run(client, root, url, streams, seconds, work, profile)
    start = float(rows["ts"].min())
    inside = [r for r in readings if start + EDGE_S <= r[0] <= start + seconds - EDGE_S]
    (t0, cpu0), (t1, cpu1) = inside[0], inside[-1]
    ended = rows["ts"] + rows["latency_ms"] / 1000.0
    done = rows[(ended > t0) & (ended <= t1)]
    errors = done["ttft_ms"] - TTFT_MS
    return Measurement(
        gc_collections(work / GC_LOG, t0, t1, len(done)),
        streams,
        len(done),
        len(done) / (t1 - t0),
        (cpu1 - cpu0) * 1000.0 / max(len(done), 1),
        (cpu1 - cpu0) / (t1 - t0),
        float(errors.median()),
        float(errors.quantile(0.95)),
        float(errors.quantile(0.99)),
        mock_lateness(url),
        f"{load_before:.1f}–{os.getloadavg()[0]:.1f}",
    )


def mock_lateness(url: str) -> str:
    """When the simulator's first token actually left, against its knob (its log of its last streams): on
    2 cores it shares them with the load generator, so its own lateness is part of what the client reads."""
    late = pd.Series(
        [s["first_token_ms"] - TTFT_MS for s in httpx.get(f"{url}/v1/sim/streams").json()["streams"]]
    )
    return f"{late.median():+.1f} / {late.quantile(0.95):+.1f}" if len(late) else "-"


def gc_collections(log: Path, t0: float, t1: float, requests: int) -> str:
    """The collections that ended inside the window: how many of each generation, their ms per request,
    the longest (a pause of the event loop)."""
    if not log.exists():
        return "-"
    inside = [c for c in map(json.loads, log.read_text().splitlines()) if t0 <= c[0] <= t1]
    passes = "/".join(str(sum(1 for c in inside if c[1] == gen)) for gen in (0, 1, 2))
    total, longest = sum(c[2] for c in inside), max((c[2] for c in inside), default=0.0)
    return f"{passes}, {total / max(requests, 1):.3f}, {longest:.1f} ms"


def part_of(stack: str) -> str:
    """The part a py-spy sample's stack (frames root first, `;`-separated) belongs to."""
    if any(name in stack for name in GC_FRAMES):
        return "GC (the collector)"
    if "Thread._bootstrap" in stack:  # a thread of its own (gevent's thread pool, a clock), not the loop's
        return "other threads"
    for frame in reversed(stack.split(";")):
        for part, fragments in PARTS:
            if any(fragment in frame for fragment in fragments):
                return part
    return HUB


def breakdown(profile: Path) -> collections.Counter[str]:
    """Samples per part, from py-spy's raw output (one `stack count` line per distinct stack), less those
    caught waiting in the hub's epoll_wait (py-spy's own idle test lets some through): no CPU."""
    counts: collections.Counter[str] = collections.Counter()
    for line in profile.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack.rpartition(";")[2].startswith(IDLE_FRAMES):
            counts[part_of(stack)] += int(n)
    return counts


def print_breakdown(counts: collections.Counter[str], cpu_ms: float) -> None:
    total = sum(counts.values())
    print(f"\nprofile: {total} samples at {PROFILE_HZ} Hz; each part's share of the CPU per request\n")
    print("| part | samples | share | CPU ms / request |")
    print("|---|---|---|---|")
    for part, n in counts.most_common():
        print(f"| {part} | {n} | {n / total:.1%} | {cpu_ms * n / total:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="100", help="comma-separated stream counts, one run each")
    parser.add_argument("--runs", type=int, default=1, help="runs per stream count")
    parser.add_argument("--seconds", type=float, default=30.0, help=f"per run, more than {2 * EDGE_S + 4:g}")
    parser.add_argument(
        "--profile",
        type=lambda p: Path(p).resolve(),
        help="record each run's steady middle with py-spy, into DIR",
    )
    parser.add_argument("--client", choices=CLIENTS, default="kit", help="the kit, or a raw client beside it")
    parser.add_argument("--kit-root", type=lambda p: Path(p).resolve(), default=REPO, help="the kit to run")
    args = parser.parse_args()
    if args.seconds <= 2 * EDGE_S + 4:
        parser.error(f"--seconds must exceed {2 * EDGE_S + 4:g}")
    streams = [int(s) for s in args.streams.split(",")]
    when = time.strftime("%Y-%m-%d %H:%M")
    print(f"{platform.node()}, {os.cpu_count()} cores, {when}, {args.client} (the kit in {args.kit_root})")
    print(
        f"closed loop, mock TTFT {TTFT_MS} ms, {TOKENS} tokens {ITL_MS} ms apart, {args.seconds:g} s a run\n"
    )
    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    knobs = ["--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS), "--output-tokens", str(TOKENS)]
    profiles: list[tuple[Path, float]] = []
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-stream-cpu-") as tmp:
        for i, (count, _) in enumerate((c, r) for c in streams for r in range(args.runs)):
            work = Path(tmp) / str(i)
            work.mkdir()
            profile = args.profile / f"profile-{count}-{i}.txt" if args.profile else None
            gateway = launch.start(knobs)
            try:
                reading = measure(args.client, args.kit_root, gateway.url, count, args.seconds, work, profile)
            finally:
                gateway.stop()
            print(reading.row(), flush=True)
            if profile is not None and profile.exists():
                profiles.append((profile, reading.cpu_ms))
        for profile, cpu_ms in profiles:
            print_breakdown(breakdown(profile), cpu_ms)


if __name__ == "__main__":
    main()
