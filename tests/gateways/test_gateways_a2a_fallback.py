"""A2A 1.0 -> 0.3 fallback against servers that refuse 1.0: the real a2a-sdk server behind a real proxy that
drops the A2A-Version header (the server then reads every call as 0.3 and answers 1.0 methods with -32009),
and the SDK's own 0.3 adapter served alone (1.0 methods unknown, -32601). Every message and every stream
completes; the single refused call per agent is a failed row of its own.

Truth: the test server's --work-s; the server's task state.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

import pytest

pytest.importorskip(
    "a2a.server.routes", reason="a2a-sdk[http-server] not installed (requirements-gateways.txt)"
)

from agents.a2a import A2AAgent
from contract import schema
from tests.gateways.harness import agent_user, free_port, rows, running_server
from tests.paths import TEST_GATEWAYS

pytestmark = [pytest.mark.gateways, pytest.mark.e2e]
WORK_S = 0.2
TASKS = 4
OPTIONS = {"poll_interval": 0.05, "task_timeout": 10.0, "request_timeout": 10.0, "a2a_version": "1.0"}


def a2a_server(*flags: str):
    port = free_port()
    command = [
        sys.executable,
        str(TEST_GATEWAYS / "a2a_server.py"),
        "--port",
        str(port),
        "--work-s",
        str(WORK_S),
    ]
    return running_server([*command, *flags], "/health", port)


@contextmanager
def header_dropping_proxy():
    with a2a_server() as upstream:
        port = free_port()
        command = [sys.executable, str(TEST_GATEWAYS / "header_proxy.py"), "--port", str(port)]
        command += ["--upstream", upstream, "--drop", "A2A-Version"]
        with running_server(command, "/proxy-health", port) as url:
            yield url


@contextmanager
def v03_only_server():
    with a2a_server("--v03-only") as url:
        yield url


SERVERS = {"header-dropping proxy": header_dropping_proxy, "0.3-only SDK server": v03_only_server}


@pytest.fixture(scope="module", params=list(SERVERS))
def refusing_url(request):
    with SERVERS[request.param]() as url:
        yield url


@pytest.mark.timing
@pytest.mark.parametrize("stream", [False, True], ids=["message", "stream"])
def test_every_task_completes_after_falling_back_to_0_3(refusing_url, tmp_path, stream):
    with agent_user(A2AAgent, refusing_url, tmp_path, a2a_stream=stream, **OPTIONS) as user:
        for _ in range(TASKS):
            user.send_and_wait()
    assert user.version == "0.3"
    tasks = rows(tmp_path, schema.TASKS_CSV)
    assert [t["status"] for t in tasks] == ["done"] * TASKS, tasks
    for task in tasks:
        assert WORK_S * 1000 - 20 <= float(task["total_ms"]) < WORK_S * 1000 + 1500, task
    requests = rows(tmp_path, schema.REQUESTS_CSV)
    refused = [r for r in requests if r["ok"] != "1"]
    assert len(refused) == 1, refused  # the one 1.0 call that taught the agent to speak 0.3
    assert refused[0]["error"].split()[0] in ("-32009", "-32601"), refused
    operation = "a2a.stream" if stream else "a2a.send"
    sent = [r for r in requests if r["operation"] == operation and r["ok"] == "1"]
    assert len(sent) == TASKS, requests
    if stream:
        assert all(abs(float(r["ttft_ms"]) - WORK_S * 1000) < 300 for r in sent), sent


def test_a_0_3_card_selects_0_3_without_a_refused_call(tmp_path):
    with v03_only_server() as url:
        with agent_user(A2AAgent, url, tmp_path, **{**OPTIONS, "a2a_version": "auto"}) as user:
            user.send_and_wait()
    assert user.version == "0.3"
    assert [t["status"] for t in rows(tmp_path, schema.TASKS_CSV)] == ["done"]
    assert all(r["ok"] == "1" for r in rows(tmp_path, schema.REQUESTS_CSV))
