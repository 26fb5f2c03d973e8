"""Benchmark, run by hand: what replaying recorded sessions (`--sessions FILE`) costs the load generator.

100 concurrent agents replay 100 recorded sessions of 20 steps whose history grows to 20,000 tokens (an
agent loop's shape: each step resends the history with one more assistant turn and tool result), with no
think time, against the plain chat agent (its fixed prompt), the simulator at 0 ms TTFT, 100 users,
`locust -f locustfile.py --headless` as a user runs it, alternated so drift on a shared host hits both.
Goals: >= 90 % of the plain chat agent's request rate; the load generator's memory per
replaying agent <= 2 MiB beyond the history's own bytes (the parsed session file, held once per process).
Run: python benchmarks/bench_replay.py [--seconds 20] [--pairs 2] [--sessions 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_workload  # noqa: E402  (its alternated smoke runs of 100 agents)

from contract.schema import SESSION_FORMAT  # noqa: E402
from scenarios.workloads.session_file import load_sessions  # noqa: E402

STEPS = 20
HISTORY_TOKENS = 20_000
CHARS_PER_TOKEN = 4  # the simulator's count of plain English words, near enough for sizing


def text(tokens: int, seed: str) -> str:
    """About `tokens` tokens of words unique to `seed` (no two sessions share a prompt)."""
    words = f"{seed} lorem ipsum dolor sit amet consectetur".split()
    out, size = [], 0
    while size < tokens * CHARS_PER_TOKEN:
        word = words[len(out) % len(words)]
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def session_lines(number: int) -> list[dict]:
    """One session's calls: a 1,000-token system prompt and a task, then per step one tool call and its
    result, so its last call's history is ~HISTORY_TOKENS tokens."""
    name = f"bench-{number}"
    per_step = (HISTORY_TOKENS - 1_000) // STEPS // 2
    messages: list[dict] = [
        {"role": "system", "content": text(950, f"s{number}")},
        {"role": "user", "content": text(50, f"task{number}")},
    ]
    lines = []
    for step in range(STEPS):
        body = {"model": "sim-model", "messages": list(messages), "stream": True, "max_tokens": 16}
        answer = {"status": 200, "latency_ms": 20.0, "usage": {"completion_tokens": 16}}
        lines.append(
            {
                "offset_s": step * 0.1,
                "session": name,
                "step": step,
                "think_ms": None if step == 0 else 0.0,
                "api": "chat",
                "request": body,
                "response": answer,
            }
        )
        call = {"id": f"call_{step}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
        messages.append(
            {"role": "assistant", "content": text(per_step, f"a{number}.{step}"), "tool_calls": [call]}
        )
        messages.append(
            {"role": "tool", "tool_call_id": f"call_{step}", "content": text(per_step, f"t{step}")}
        )
    return lines


def write_sessions(path: Path, count: int) -> None:
    with path.open("w") as handle:
        handle.write(json.dumps({"format": SESSION_FORMAT, "upstream": "bench://", "started_ts": 0.0}) + "\n")
        for number in range(count):
            for line in session_lines(number):
                handle.write(json.dumps(line) + "\n")


def held_mib(path: Path) -> float:
    """The parsed session file's own memory (what every replaying process holds once)."""
    tracemalloc.start()
    sessions = load_sessions(str(path))
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del sessions
    return held / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=100)
    args = parser.parse_args()
    print(f"{platform.node()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        recorded = Path(tmp) / "sessions.jsonl"
        write_sessions(recorded, args.sessions)
        file_mib = held_mib(recorded)
        print(
            f"{args.sessions} sessions x {STEPS} steps: {recorded.stat().st_size / 2**20:.0f} MiB file, "
            f"{file_mib:.0f} MiB parsed"
        )
        configs = {"plain chat": ("ChatAgent",), "replay": ("ReplayAgent", "--sessions", str(recorded))}
        runs = bench_workload.alternated(args.seconds, args.pairs, configs)
    (plain_rate, plain_cpu), (replay_rate, replay_cpu) = (bench_workload.summed(r) for r in runs.values())
    plain_rss = max(r.loadgen_rss_mib for r in runs["plain chat"])
    replay_rss = max(r.loadgen_rss_mib for r in runs["replay"])
    per_agent = (replay_rss - plain_rss - file_mib) / 100
    print(
        f"replay at {replay_rate / plain_rate * 100:.0f} % of the plain chat agent's rate; load generator "
        f"CPU per request {plain_cpu:.2f} vs {replay_cpu:.2f} ms; peak RSS {plain_rss:.0f} vs "
        f"{replay_rss:.0f} MiB: {per_agent:.2f} MiB per replaying agent beyond the parsed file; "
        f"load average now {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
