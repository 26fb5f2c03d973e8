"""A probe's GET (health checks, the queue probe), bounded in time and bytes whatever the server does: a
health path that drips its body a byte a second, or answers with gigabytes, neither holds the caller nor
fills its memory. httpx bounds each read (its timeout), not the whole answer; this bounds the body too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import httpx

HEALTH_MAX_BYTES = 64 * 1024  # a health body read whole keeps the connection for the next probe
PROBE_MAX_BYTES = 1024 * 1024  # a queue probe's JSON


@dataclass(frozen=True)
class ProbeAnswer:
    status: int
    body: bytes  # at most max_bytes of it
    whole: bool  # the body came whole within the time (else cut: by size or by time)

    def json(self) -> object:
        if not self.whole:
            raise ValueError(f"the body did not come whole ({len(self.body):,} bytes read)")
        return httpx.Response(self.status, content=self.body).json()


def probe_get(
    client: httpx.Client, url: str, total_s: float, max_bytes: int = HEALTH_MAX_BYTES
) -> ProbeAnswer:
    """One GET: its status, and its body up to max_bytes as far as it came within total_s of the call
    (each read bounded by the client's timeout); httpx.HTTPError when no status came."""
    deadline = time.monotonic() + total_s
    with client.stream("GET", url) as response:
        body, whole = bytearray(), True
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > max_bytes or time.monotonic() > deadline:
                whole = False
                break
        return ProbeAnswer(response.status_code, bytes(body[:max_bytes]), whole)
