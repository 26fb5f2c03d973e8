"""Benchmark, run by hand: what reassembling streamed tool-call deltas adds per chunk.

Captures a real stream from the simulator (4 parallel calls, arguments in 1-character fragments: the
worst case, one delta per character), then times reading its chunks with the chat agent's plain check
(content or not) and with agents/loop/tool_deltas.py's reassembly. Goal: <= 0.1 ms per chunk added.
Run: python benchmarks/bench_tool_deltas.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.loop.tool_deltas import ToolCallAssembler, chat_token_kind
from simgateway import launch
from simgateway.client import stream_lines

PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "note": {"type": "string"}, "days": {"type": "integer"}},
}
KNOBS = ["--ttft-ms", "0", "--itl-ms", "0", "--tool-call-steps", "1", "--tool-calls-per-step", "4"]


def captured_chunks() -> list[str]:
    """The `data:` payloads of one streamed tool-call answer."""
    tools = [{"type": "function", "function": {"name": "weather", "parameters": PARAMS}}]
    body = {"messages": [{"role": "user", "content": "go"}], "tools": tools, "stream": True}
    with launch.running([*KNOBS, "--tool-arg-fragment-chars", "1"]) as gw:
        lines = stream_lines(gw.url, "/v1/chat/completions", body)
        return [line[6:] for line in lines if line.startswith("data: {")]


def plain(chunks: list[str]) -> None:
    """The chat agent's check before the loop: is there content in this chunk?"""
    for data in chunks:
        chunk = json.loads(data)
        any((c.get("delta") or {}).get("content") for c in chunk.get("choices") or ())


def reassembling(chunks: list[str]) -> None:
    assembler = ToolCallAssembler()
    for data in chunks:
        chat_token_kind(json.loads(data), assembler)
    assembler.calls()


def per_chunk_us(read, chunks: list[str], rounds: int) -> float:
    """Median over rounds of microseconds per chunk."""
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        read(chunks)
        samples.append((time.perf_counter() - t0) / len(chunks) * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    chunks = captured_chunks()
    base = per_chunk_us(plain, chunks, args.rounds)
    full = per_chunk_us(reassembling, chunks, args.rounds)
    print(f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"chunks per stream: {len(chunks)} (4 calls, 1-character argument fragments)")
    print(f"parse + content check: {base:.2f} us/chunk; parse + reassembly: {full:.2f} us/chunk")
    print(f"added by reassembly: {full - base:.2f} us/chunk (goal <= 100 us)")


if __name__ == "__main__":
    main()
