"""The worker process one task runs in: hold worker memory, call the gateway's mock LLM, report usage.

Started by the board as `python -m simgateway.task_worker ...`, the task's prompt on its stdin; prints JSON
lines on stdout (`started` with its pid, then `done` or `failed` with summed usage). Must not outlive its
gateway.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict

from simgateway import client, memory
from simgateway.lifeline import die_with_parent, sleep_while_alive
from simgateway.usage import TaskUsage


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m simgateway.task_worker")
    p.add_argument("--url", required=True, help="gateway base URL")
    p.add_argument("--gateway-pid", type=int, required=True)
    p.add_argument("--task-id", required=True)
    p.add_argument("--mib", type=float, default=0.0)
    p.add_argument("--ramp-s", type=float, default=0.0, help="reach --mib over this long, in steps")
    p.add_argument("--calls", type=int, default=0)
    p.add_argument(
        "--until", type=float, required=True, help="epoch seconds the task ends (LLM time included)"
    )
    p.add_argument("--model", default="sim-model")
    p.add_argument("--max-tokens", type=int, default=None, help="max_tokens of each LLM call")
    p.add_argument("--fail", action="store_true", help="report failure at the end (the gateway drew it)")
    p.add_argument("--detach", action="store_true", help="leave the gateway's process tree first")
    return p.parse_args(argv)


def emit(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def detach() -> None:
    """Fork, let the original exit, start a new session: our parent becomes init (or a subreaper)."""
    if os.fork():
        os._exit(0)
    os.setsid()


def call_llm(url: str, model: str, prompt: str, timeout: float, max_tokens: int | None = None) -> dict:
    """One non-streamed chat completion against the gateway; returns its `usage` object."""
    body: dict = {"model": model, "messages": [{"role": "user", "content": prompt}]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    reply = client.request(url, "POST", "/v1/chat/completions", body, timeout)
    if reply.status != 200:
        raise ValueError(f"HTTP {reply.status}")
    return reply.json()["usage"]


def run_calls(args: argparse.Namespace, prompt: str) -> tuple[TaskUsage, str | None]:
    usage = TaskUsage()
    for i in range(args.calls):
        try:
            usage = usage.plus(call_llm(args.url, args.model, prompt, 60.0, args.max_tokens))
        except (OSError, ValueError, KeyError, TypeError) as e:
            return usage, f"llm call {i + 1}: {e}"
    return usage, None


RAMP_STEPS = 10


def allocate_over(mib: float, ramp_s: float) -> list:
    """`mib` MiB resident, all at once or in RAMP_STEPS equal steps over `ramp_s` seconds."""
    if ramp_s <= 0:
        return [memory.allocate_touched(mib)]
    blocks = []
    for _ in range(RAMP_STEPS):
        blocks.append(memory.allocate_touched(mib / RAMP_STEPS))
        time.sleep(ramp_s / RAMP_STEPS)
    return blocks


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    prompt = sys.stdin.read()  # the board writes the task's prompt, then closes the pipe
    if args.detach:
        detach()
    else:
        die_with_parent(args.gateway_pid)
    blocks = allocate_over(args.mib, args.ramp_s)  # noqa: F841  (held for the task's life)
    emit({"event": "started", "pid": os.getpid(), "task_id": args.task_id})  # memory already resident
    usage, error = run_calls(args, prompt)
    if not sleep_while_alive(args.until - time.time(), args.gateway_pid):
        return 1
    if error is None and args.fail:
        error = "simulated task failure"
    emit({"event": "failed" if error else "done", "usage": asdict(usage), "error": error})
    return 0


if __name__ == "__main__":
    sys.exit(main())
