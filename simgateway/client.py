"""A minimal standard-library HTTP client for the gateway: used by task workers and by the tests.

Standard library only, so it works in a fresh worker process and under gevent patching (where httpx may
not import when trio is installed). Must not retry or interpret errors: callers decide.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class Reply:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self):
        return json.loads(self.body)


def _connect(url: str, timeout: float) -> http.client.HTTPConnection:
    parts = urlsplit(url)
    if not parts.hostname:
        raise ValueError(f"no host name in {url!r}")
    return http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)


def request(url: str, method: str, path: str, body: object = None, timeout: float = 30.0) -> Reply:
    """One request with an optional JSON body (bytes are sent as they are); the whole reply read."""
    conn = _connect(url, timeout)
    try:
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        conn.request(method, path, data, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return Reply(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
    finally:
        conn.close()


def stream_lines(url: str, path: str, body: object, timeout: float = 30.0) -> Iterator[str]:
    """POST a JSON body and yield the response's lines (decoded, without line ends) as they arrive."""
    conn = _connect(url, timeout)
    try:
        conn.request("POST", path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        while line := resp.readline():
            yield line.decode().rstrip("\r\n")
    finally:
        conn.close()
