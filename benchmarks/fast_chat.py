"""`python benchmarks/fast_chat.py PORT`: the load-generator benchmarks' chat target only (bench_workload.py
`--target fast`), never a simulator: a raw asyncio HTTP/1.1 server on 127.0.0.1 answering every POST with
the same 16-token chat-completions stream (server-sent events, its usage last) at once, and any GET with
200 `{}`, on keep-alive connections.

Why: the simulator parses each request's JSON (1.0 ms of CPU for a 400 KB prompt, 0.23 ms for a short one),
so on a 2-core machine a long-prompt rate is the simulator's as much as the kit's. This one never parses a
body: it counts its bytes, reports a quarter of them as the prompt's tokens (the kit's calibration reads
usage, and 4 characters a token is what its text holds), and spends some tens of microseconds a request.
It checks nothing: a stopwatch's far end, not a gateway.
"""

from __future__ import annotations

import asyncio
import json
import sys

from fast_http import serve  # this script's own folder

TOKENS = 16


def event(choices: list, **more) -> bytes:
    """One server-sent event of a chat-completions stream."""
    chunk = {"id": "fast", "object": "chat.completion.chunk", "choices": choices, **more}
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


DELTAS = [{"role": "assistant", "content": ""}] + [{"content": f"w{i} "} for i in range(TOKENS)]
CHUNKS = b"".join(event([{"index": 0, "delta": delta}]) for delta in DELTAS)
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"


def streamed(body_bytes: int) -> bytes:
    """The stream answering a body of `body_bytes`: its chunks, a usage chunk, [DONE]."""
    usage = {"prompt_tokens": max(1, body_bytes // 4), "completion_tokens": TOKENS}
    usage["total_tokens"] = usage["prompt_tokens"] + TOKENS
    events = CHUNKS + event([], usage=usage) + b"data: [DONE]\n\n"
    return HEAD % (b"text/event-stream", len(events)) + events


def answered(method: str, body: bytearray) -> bytes:
    """A POST's stream, sized by its body; anything else `{}`."""
    return streamed(len(body)) if method == "POST" else HEAD % (b"application/json", 2) + b"{}"


if __name__ == "__main__":
    asyncio.run(serve(answered, int(sys.argv[1])))
