"""The recorder as a wire: however an upstream answer ends (its process killed mid-stream, a reset, a
chunked body or a Content-Length cut short, no answer in time, an HTTP error, a refused connection, a TLS
error), an `openai`-package client behind the recorder raises the same exception class as talking to the
upstream directly, against a real misbehaving server (tests/capture/bad_upstream.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import openai
import pytest

from lifecycle.target import free_port
from simgateway import launch
from tests.capture.test_capture_recorder import ENV, lines_of, recording
from tests.locust_runs import wait_for
from tests.paths import REPO

pytestmark = pytest.mark.e2e
KEY = "sk-canary-WIRE-0123456789abcdef"
MESSAGES = [{"role": "user", "content": "hi"}]
CASES = {  # path prefix: (streamed, the class the client raises directly; mid-stream, httpx's own)
    "killed": (True, httpx.RemoteProtocolError),
    "reset": (True, httpx.ReadError),
    "chunked": (True, httpx.RemoteProtocolError),
    "length": (False, openai.APIConnectionError),
    "timeout": (False, openai.APITimeoutError),
    "denied": (False, openai.AuthenticationError),
    "failing": (False, openai.InternalServerError),
}


@contextmanager
def bad_upstream() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "capture" / "bad_upstream.py")],
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = proc.stdout.readline().strip() if proc.stdout else ""
        assert port.isdigit(), "the misbehaving upstream did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def raised(base: str, streamed: bool) -> type[BaseException] | None:
    """What one chat call (read to its end when streamed) raises, no retries, 1.5 s timeout."""
    client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=1.5)
    try:
        if streamed:
            for _ in client.chat.completions.create(model="m", messages=MESSAGES, stream=True):
                pass
        else:
            client.chat.completions.create(model="m", messages=MESSAGES)
    except Exception as exc:  # the class is the finding
        return type(exc)
    finally:
        client.close()
    return None


def test_every_way_an_answer_ends_reaches_the_agent_as_it_would_directly(tmp_path):
    out = tmp_path / "s.jsonl"
    with bad_upstream() as upstream, recording(upstream, out) as (base, _):
        seen = {
            case: (raised(f"{upstream}/{case}/v1", s), raised(f"{base}/{case}/v1", s))
            for case, (s, _) in CASES.items()
        }
    expected = {case: (cls, cls) for case, (_, cls) in CASES.items()}
    assert {c: tuple(k and k.__name__ for k in v) for c, v in seen.items()} == {
        c: tuple(k.__name__ for k in v) for c, v in expected.items()
    }
    assert len(lines_of(out)) == 1  # these paths are not the model API's: passed, not recorded


def closed_port() -> int:
    """A port nothing listens on (taken free, then released)."""
    return free_port()


@pytest.mark.parametrize("kind", ["refused", "tls"])
def test_a_refused_connection_and_a_tls_error_reach_the_agent_as_they_would_directly(tmp_path, kind):
    with bad_upstream() as plain:
        # refused: a port nobody listens on; tls: https to a server that speaks plain HTTP
        upstream = (
            f"http://127.0.0.1:{closed_port()}" if kind == "refused" else plain.replace("http", "https")
        )
        with recording(upstream, tmp_path / "s.jsonl") as (base, proc):
            direct, proxied = raised(f"{upstream}/v1", False), raised(f"{base}/v1", False)
    assert direct is openai.APIConnectionError and proxied is openai.APIConnectionError


def test_a_reset_is_a_reset_to_the_agent(tmp_path):
    """Not only the same class: the agent's socket sees ECONNRESET where the upstream reset."""
    with bad_upstream() as upstream, recording(upstream, tmp_path / "s.jsonl") as (base, _):
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                b"POST /reset/v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
            )
            with pytest.raises(ConnectionResetError):
                while sock.recv(65536):
                    pass


def test_a_canary_key_in_the_body_the_headers_an_error_and_an_echoed_answer_never_reaches_the_file(tmp_path):
    out = tmp_path / "s.jsonl"
    nested, header = "sk-canary-NESTED-abcdef0123", "sk-canary-HEADER-abcdef0123"
    extra = {
        "metadata": {"api_key": nested, "openai_api_key": nested, "password": nested},
        "extra_headers": {"Authorization": f"Bearer {header}"},
    }
    with bad_upstream() as upstream, recording(upstream, out) as (base, _):
        client = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0, timeout=5)
        answer = client.chat.completions.create(model="m", messages=MESSAGES, extra_body=extra)
        with pytest.raises(openai.AuthenticationError, match=KEY):  # the upstream echoes the key in its 401
            client.chat.completions.create(
                model="m", messages=MESSAGES, extra_headers={"X-Bad-Case": "denied"}
            )
        client.close()
    said = answer.choices[0].message.content or ""
    assert KEY in said and nested in said and header in said  # the upstream did echo all three
    text = out.read_text()
    header_line, echoed, denied = lines_of(out)
    assert (
        echoed["response"]["content"].startswith("you sent Bearer ***")
        and denied["response"]["status"] == 401
    )
    assert echoed["request"]["metadata"] == {"api_key": "***", "openai_api_key": "***", "password": "***"}
    assert KEY not in text and nested not in text and header not in text


def test_an_agent_that_hangs_up_mid_answer_is_recorded_broken_and_one_that_leaves_at_done_is_not(tmp_path):
    out = tmp_path / "s.jsonl"
    sim = ["--ttft-ms", "20", "--itl-ms", "100", "--output-tokens", "30"]  # 3 s of answer
    with launch.running(sim) as gw, recording(gw.url, out) as (base, _):
        body = {"model": "m", "messages": MESSAGES, "stream": True}
        with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=10) as answer:
            next(answer.iter_bytes())  # the first chunk, then the agent leaves
        client = openai.OpenAI(base_url=f"{base}/v1", api_key=KEY, max_retries=0, timeout=10)
        for _ in client.chat.completions.create(model="m", messages=MESSAGES, stream=True, max_tokens=3):
            pass  # the SDK closes at [DONE], before the chunked body's end
        client.close()
        wait_for(lambda: len(lines_of(out)) == 3, 10, "both calls recorded")
    # told apart by what they asked, not by order: the one that left is recorded after its grace, which
    # on a busy host can be after the whole one
    whole, left = sorted(lines_of(out)[1:], key=lambda line: "max_tokens" not in line["request"])
    assert left["response"]["broken"] == "the agent hung up" and "broken" not in whole["response"]
