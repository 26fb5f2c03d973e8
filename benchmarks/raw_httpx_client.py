"""The raw-httpx side of benchmarks/bench_side_by_side.py: closed-loop chat streams with sync httpx under
gevent (the kit's own client stack, without Locust or the kit), one JSON line per request to OUT.

Streams start spread over one second, as Locust spawns users at -r = -u. Not run on its own.
Usage: python benchmarks/raw_httpx_client.py URL STREAMS SECONDS OUT
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
import httpx  # noqa: E402

BODY = {
    "model": "m",
    "stream": True,
    "max_tokens": 64,
    "messages": [{"role": "user", "content": "Summarise the state of the task board in one sentence."}],
    "stream_options": {"include_usage": True},
}


def stream_forever(url: str, end: float, rows: list[dict]) -> None:
    """Send again as soon as the answer ends; TTFT at the first chunk with content (not the role chunk)."""
    with httpx.Client(base_url=url, timeout=60) as client:
        while time.monotonic() < end:
            ts, sent, first = time.time(), time.perf_counter(), None
            with client.stream("POST", "/v1/chat/completions", json=BODY) as response:
                for line in response.iter_lines():
                    if first is None and line.startswith("data: {") and '"content": "' in line:
                        first = None if '"content": ""' in line else time.perf_counter()
            done = time.perf_counter()
            rows.append({"ts": ts, "ttft_ms": (first - sent) * 1000.0, "latency_ms": (done - sent) * 1000.0})


def main(url: str, streams: int, seconds: float, out: str) -> None:
    rows: list[dict] = []
    end = time.monotonic() + seconds
    greenlets = [gevent.spawn_later(i / streams, stream_forever, url, end, rows) for i in range(streams)]
    gevent.joinall(greenlets)
    Path(out).write_text("\n".join(json.dumps(row) for row in rows))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
