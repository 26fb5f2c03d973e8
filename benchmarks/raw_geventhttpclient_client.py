"""benchmarks/raw_httpx_client.py with geventhttpclient (Locust's FastHttpUser's HTTP stack) instead of httpx:
the same closed-loop chat streams, the same body encoded once, TTFT at the first content line, one JSON
line per request to OUT. What a cheaper HTTP stack could save the kit per request, without the kit.
Lines are read with `readline()`: its `iter_lines()` reads 1,024-byte blocks, so a small SSE chunk waits
for later ones (docs/field-notes: +100 ms). Not run on its own (benchmarks/bench_stream_cpu.py --raw).
Usage: python benchmarks/raw_geventhttpclient_client.py URL STREAMS SECONDS OUT
"""

from gevent import monkey

monkey.patch_all()

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import gevent  # noqa: E402
from geventhttpclient import HTTPClient  # noqa: E402
from raw_httpx_client import HEADERS, body  # noqa: E402 - this script's own folder

PATH = "/v1/chat/completions"


def stream_forever(url: str, end: float, content: bytes, rows: list[dict]) -> None:
    """Send again as soon as the answer ends; TTFT at the first line with content (not the role chunk)."""
    client = HTTPClient.from_url(url, concurrency=1, network_timeout=60)
    while time.monotonic() < end:
        ts, sent, first = time.time(), time.perf_counter(), None
        response = client.request("POST", PATH, body=content, headers=HEADERS)
        while line := response.readline(b"\n"):  # SSE lines end with LF; its default is CRLF
            if first is None and line.startswith(b"data: {") and b'"content": "' in line:
                first = None if b'"content": ""' in line else time.perf_counter()
        response.release()
        done = time.perf_counter()
        ttft_ms = None if first is None else (first - sent) * 1000.0
        rows.append({"ts": ts, "ttft_ms": ttft_ms, "latency_ms": (done - sent) * 1000.0})
    client.close()


def main(url: str, streams: int, seconds: float, out: str) -> None:
    rows: list[dict] = []
    end, content = time.monotonic() + seconds, body(0)
    greenlets = [
        gevent.spawn_later(i / streams, stream_forever, url, end, content, rows) for i in range(streams)
    ]
    gevent.joinall(greenlets)
    Path(out).write_text("\n".join(json.dumps(row) for row in rows))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4])
