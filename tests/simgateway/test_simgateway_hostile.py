"""The hostile knob over real HTTP: streams that never end and answers too large, on every path but the
health check and the tests' own truth."""

from __future__ import annotations

import time

import httpx
import pytest

from simgateway import launch

pytestmark = pytest.mark.e2e  # a simulator process
SIZE = 300_000


def read_for(url: str, path: str, seconds: float) -> tuple[int, bytes]:
    """(status, the bytes a plain client read) within `seconds` or to the body's end."""
    read = b""
    with httpx.Client(timeout=5) as client, client.stream("POST", url + path, json={}) as response:
        started = time.monotonic()
        for chunk in response.iter_raw():
            read += chunk
            if time.monotonic() - started > seconds:
                break
        return response.status_code, read


def test_every_hostile_mode_answers_every_path_but_health():
    answers = {}
    for mode in ("drip", "garbage", "huge-body", "huge-line"):
        with launch.running(["--hostile", mode, "--hostile-bytes", str(SIZE)]) as gateway:
            for path in ("/v1/chat/completions", "/v1/tasks"):
                answers[mode, path] = read_for(gateway.url, path, 0.7)
            assert httpx.get(gateway.url + "/health").json()["status"] == "ok"
            assert httpx.get(gateway.url + "/v1/sim/streams").json() == {"streams": []}
    for (mode, path), (status, body) in answers.items():
        assert status == 200, (mode, path)
        if mode == "drip":
            assert body.startswith(b": still thinking\n\n") and b"data:" not in body
            assert body.count(b": still thinking") in (2, 3)  # one every 0.5 s, never an end
        elif mode == "garbage":
            assert len(body) > 100 and b"\n" not in body
        elif mode == "huge-body":
            assert body == b'{"pad": "' + b"x" * SIZE + b'"}'
        else:
            line, rest = body.split(b"\n", 1)
            assert line == b'data: {"pad": "' + b"x" * SIZE + b'"}' and rest == b"\ndata: [DONE]\n\n"
