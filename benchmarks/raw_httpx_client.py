"""The raw-httpx side of benchmarks/bench_side_by_side.py: closed-loop chat streams with sync httpx under
gevent (the kit's own client stack, without Locust or the kit), one JSON line per request to OUT.

Streams start spread over one second, as Locust spawns users at -r = -u. PROMPT_TOKENS (0: one fixed
sentence) sizes the prompt in the simulator's count, ceil(chars / 4) (benchmarks/side_by_side_prompt.py).
The body is encoded once: the floor a client pays to stream, without prompt-making of its own. Not run on
its own.
Usage: python benchmarks/raw_httpx_client.py URL STREAMS SECONDS OUT [PROMPT_TOKENS]
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import ssl  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
import httpx  # noqa: E402
from side_by_side_prompt import prompt_text  # noqa: E402 - this script's own folder

HEADERS = {"content-type": "application/json"}


def body(prompt_tokens: int) -> bytes:
    """The request, encoded once: the same for every stream and every request."""
    return json.dumps(
        {
            "model": "m",
            "stream": True,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": prompt_text(prompt_tokens)}],
            "stream_options": {"include_usage": True},
        }
    ).encode()


def stream_forever(url: str, end: float, content: bytes, tls: ssl.SSLContext, rows: list[dict]) -> None:
    """Send again as soon as the answer ends; TTFT at the first chunk with content (not the role chunk)."""
    with httpx.Client(base_url=url, timeout=60, verify=tls) as client:
        while time.monotonic() < end:
            ts, sent, first = time.time(), time.perf_counter(), None
            with client.stream("POST", "/v1/chat/completions", content=content, headers=HEADERS) as response:
                for line in response.iter_lines():
                    if first is None and line.startswith("data: {") and '"content": "' in line:
                        first = None if '"content": ""' in line else time.perf_counter()
            done = time.perf_counter()
            ttft_ms = None if first is None else (first - sent) * 1000.0  # an answer with no content
            rows.append({"ts": ts, "ttft_ms": ttft_ms, "latency_ms": (done - sent) * 1000.0})


def main(url: str, streams: int, seconds: float, out: str, prompt_tokens: int) -> None:
    rows: list[dict] = []
    end, content = time.monotonic() + seconds, body(prompt_tokens)
    tls = ssl.create_default_context()  # one for all: each client's own is tens of ms of CPU on the loop
    greenlets = [
        gevent.spawn_later(i / streams, stream_forever, url, end, content, tls, rows) for i in range(streams)
    ]
    gevent.joinall(greenlets)
    Path(out).write_text("\n".join(json.dumps(row) for row in rows))


if __name__ == "__main__":
    main(
        sys.argv[1],
        int(sys.argv[2]),
        float(sys.argv[3]),
        sys.argv[4],
        int(sys.argv[5]) if len(sys.argv) > 5 else 0,
    )
