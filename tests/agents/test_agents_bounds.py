"""The load generator's bounds on what it reads, for every protocol: `--request-timeout` ends a request at
its deadline whatever the gateway sends (an SSE comment every 0.5 s forever, chunked garbage forever), and
an answer past `--max-response-bytes` or `--max-sse-line-bytes` is a `too_large` row, read no further.

Truth: the simulator's `--hostile` knob (simgateway/hostile.py) answers every path that way.
"""

from __future__ import annotations

import shlex
import sys
import tracemalloc
from collections.abc import Callable

import gevent
import httpx
import pytest
from locust.exception import StopUser

from agents.base import KitAgent
from agents.capacity.idle_agents import SessionAgent
from agents.gateways.a2a import A2AAgent
from agents.gateways.acp import AcpAgent
from agents.gateways.hermes_runs import HermesRunsAgent
from agents.gateways.langgraph import LangGraphAgent
from agents.gateways.openai_chat import ChatAgent
from agents.gateways.responses import ResponsesAgent
from agents.gateways.spec import SpecAgent
from agents.gateways.task_board import TaskAgent
from agents.wire.reading import BoundedBody, ReadBounds, TooLarge
from contract import schema
from simgateway import launch
from tests.gateways.harness import agent_user, rows
from tests.paths import TEST_GATEWAYS

pytestmark = pytest.mark.e2e  # a simulator process per test
DEADLINE_S = 0.8  # above the drip's 0.5 s gap: httpx's per-read timeout alone would never fire
LATE_BAR_S = 0.4  # how far past the deadline a request may end: a loop wake-up, not another read
SPEC = "examples/specs/simulator-tasks.toml"
MIB = 1024 * 1024

# every protocol's first request(s): (agent class, its options, what the test calls after on_start)
PROTOCOLS: dict[str, tuple[type[KitAgent], dict, Callable]] = {
    "chat stream": (ChatAgent, {}, lambda user: user.chat_stream()),
    "chat": (ChatAgent, {"chat_stream": False}, lambda user: user.chat_stream()),
    "responses stream": (ResponsesAgent, {}, lambda user: user.respond()),
    "responses": (ResponsesAgent, {"responses_stream": False}, lambda user: user.respond()),
    "task board": (TaskAgent, {}, lambda user: user.run_task(None)),
    "sessions": (SessionAgent, {}, lambda user: None),  # on_start opens the session
    "a2a": (A2AAgent, {"a2a_version": "auto"}, lambda user: None),  # on_start reads the agent card
    "langgraph": (LangGraphAgent, {}, lambda user: None),  # on_start finds the assistant
    "hermes runs": (HermesRunsAgent, {}, lambda user: user.run_and_follow()),
    "spec file": (SpecAgent, {"spec_file": SPEC}, lambda user: user.run_task(None)),
}


def first_rows(kind: type[KitAgent], url: str, run_dir, options: dict, act: Callable) -> list[dict]:
    """The rows of one started user's first request(s); the whole exchange bounded at 20 s."""
    with gevent.Timeout(20, AssertionError("the agent's request never ended")):
        with agent_user(kind, url, run_dir, cleanup=False, **options) as user:
            try:
                act(user)
            except StopUser:
                pass
    return rows(run_dir, schema.REQUESTS_CSV)


@pytest.fixture(scope="module")
def dripping():
    with launch.running(["--hostile", "drip"]) as gateway:
        yield gateway


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_request_to_a_gateway_that_drips_forever_ends_at_the_deadline_as_a_timeout_row(
    protocol, dripping, tmp_path
):
    kind, options, act = PROTOCOLS[protocol]
    found = first_rows(kind, dripping.url, tmp_path, {"request_timeout": DEADLINE_S, **options}, act)
    assert found, "no row"
    for row in found:
        assert row["error_kind"] == "timeout", row
        assert DEADLINE_S * 1000 <= float(row["latency_ms"]) <= (DEADLINE_S + LATE_BAR_S) * 1000, row


def test_a_stream_of_garbage_forever_ends_at_the_deadline_as_a_timeout_row(tmp_path):
    with launch.running(["--hostile", "garbage"]) as gateway:
        found = first_rows(
            ChatAgent, gateway.url, tmp_path, {"request_timeout": DEADLINE_S}, PROTOCOLS["chat stream"][2]
        )
    assert [r["error_kind"] for r in found] == ["timeout"]
    assert float(found[0]["latency_ms"]) <= (DEADLINE_S + LATE_BAR_S) * 1000


@pytest.mark.parametrize("protocol", ["chat stream", "chat", "responses stream", "task board", "a2a"])
@pytest.mark.parametrize("mode", ["huge-body", "huge-line"])
def test_an_answer_past_a_cap_is_a_too_large_row(protocol, mode, tmp_path):
    kind, options, act = PROTOCOLS[protocol]
    caps = {"max_response_bytes": 256 * 1024, "max_sse_line_bytes": 64 * 1024, **options}
    with launch.running(["--hostile", mode, "--hostile-bytes", str(MIB)]) as gateway:
        found = first_rows(kind, gateway.url, tmp_path, caps, act)
    assert found and found[0]["error_kind"] == schema.ERROR_TOO_LARGE, found
    assert "--max-" in found[0]["error"]


def acp_prompt_rows(tmp_path, **flags) -> list[dict]:
    """The rows of an ACP agent's start-up and two prompts, the agent process started with `flags`."""
    command = shlex.join(
        [sys.executable, str(TEST_GATEWAYS / "acp_agent.py"), *(f"--{k}={v}" for k, v in flags.items())]
    )
    options = {"acp_command": command, "request_timeout": DEADLINE_S, "max_sse_line_bytes": 64 * 1024}
    with gevent.Timeout(20, AssertionError("the agent's request never ended")):
        with agent_user(AcpAgent, "", tmp_path, **options) as user:
            user.prompt()
            user.prompt()
    return [r for r in rows(tmp_path, schema.REQUESTS_CSV) if r["operation"] == "acp.prompt"]


def test_an_acp_agent_that_never_answers_ends_at_the_deadline(tmp_path):
    prompts = acp_prompt_rows(tmp_path, **{"first-ms": 5000})
    assert [r["error_kind"] for r in prompts] == ["timeout", "timeout"]
    assert all(float(r["latency_ms"]) <= (DEADLINE_S + LATE_BAR_S) * 1000 for r in prompts), prompts


def test_an_acp_line_past_the_cap_is_too_large_and_the_process_is_not_read_again(tmp_path):
    prompts = acp_prompt_rows(tmp_path, **{"chunk-bytes": 128 * 1024})
    assert [r["error_kind"] for r in prompts] == [schema.ERROR_TOO_LARGE, "protocol"]
    assert "--max-sse-line-bytes" in prompts[0]["error"] and "cut earlier" in prompts[1]["error"]


def peak_read_bytes(url: str, bounds: ReadBounds, read: Callable[[BoundedBody], object]) -> tuple[int, str]:
    """(peak bytes Python held while reading one hostile answer, the error it ended with)."""
    with (
        httpx.Client(timeout=30) as client,
        client.stream("POST", url + "/v1/chat/completions", json={}) as r,
    ):
        tracemalloc.start()
        try:
            read(BoundedBody(r, bounds))
            error = "read to the end"
        except TooLarge as exc:
            error = str(exc)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak, error


def test_a_body_twice_the_cap_is_not_held_whole():
    cap = 8 * MIB
    with launch.running(["--hostile", "huge-body", "--hostile-bytes", str(2 * cap)]) as gateway:
        peak, error = peak_read_bytes(gateway.url, ReadBounds(30, cap, MIB), BoundedBody.read)
    assert "--max-response-bytes" in error
    assert peak < cap + 2 * MIB, (
        f"held {peak / MIB:.1f} MiB reading a {2 * cap / MIB:g} MiB body, cap {cap / MIB:g}"
    )


def test_an_sse_line_twice_its_cap_is_not_held_whole():
    cap = 2 * MIB
    with launch.running(["--hostile", "huge-line", "--hostile-bytes", str(2 * cap)]) as gateway:
        peak, error = peak_read_bytes(
            gateway.url, ReadBounds(30, 64 * MIB, cap), lambda body: list(body.lines())
        )
    assert "--max-sse-line-bytes" in error
    assert peak < cap + MIB, (
        f"held {peak / MIB:.1f} MiB reading a {2 * cap / MIB:g} MiB line, cap {cap / MIB:g}"
    )


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: a\n\ndata: b\n\n"],
        [b"data: a\r\n\r\nda", b"ta: b\r", b"\n\r\n"],
        [b"data: a\r\rdata: b\r", b"\r"],
        [b"data: a\n", b"\n", b"data: b"],
    ],
)
def test_lines_end_at_lf_crlf_or_cr_across_chunk_boundaries(chunks):
    response = httpx.Response(200, content=iter(chunks))
    lines = list(BoundedBody(response, ReadBounds(1, 1000, 100)).lines())
    assert [line for line in lines if line] == ["data: a", "data: b"], lines


def test_a_declared_length_past_the_cap_is_refused_before_reading():
    response = httpx.Response(200, headers={"Content-Length": "2000"}, content=iter([b"never read"]))
    with pytest.raises(TooLarge, match="2000 bytes"):
        BoundedBody(response, ReadBounds(1, 1000, 100))
