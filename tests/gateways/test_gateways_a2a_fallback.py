"""A2A 1.0 -> 0.3 fallback against servers that refuse 1.0: the real a2a-sdk server behind a real proxy that
drops the A2A-Version header (the server then reads every call as 0.3 and answers 1.0 methods with -32009),
and the SDK's own 0.3 adapter served alone (1.0 methods unknown, -32601). Every message and every stream
completes; the single refused call per agent is the version negotiation (`a2a.negotiate`), not a failure:
no failed row, nothing failed in Locust's stats, and a Locust run through the proxy exits 0.

Truth: the test server's --work-s; the server's task state.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

import pytest

pytest.importorskip(
    "a2a.server.routes", reason="a2a-sdk[http-server] not installed (requirements-gateways.txt)"
)

from agents.gateways.a2a import NEGOTIATE, A2AAgent
from contract import schema
from contract.exit_codes import OK
from tests.gateways.harness import agent_user, free_port, rows, running_server
from tests.locust_runs import run_locust
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
    failures: list[Exception] = []
    with agent_user(A2AAgent, refusing_url, tmp_path, a2a_stream=stream, **OPTIONS) as user:
        user.environment.events.request.add_listener(
            lambda exception=None, **_: exception is not None and failures.append(exception)
        )
        for _ in range(TASKS):
            user.send_and_wait()
    assert user.version == "0.3"
    tasks = rows(tmp_path, schema.TASKS_CSV)
    assert [t["status"] for t in tasks] == ["done"] * TASKS, tasks
    for task in tasks:
        assert WORK_S * 1000 - 20 <= float(task["total_ms"]) < WORK_S * 1000 + 1500, task
    requests = rows(tmp_path, schema.REQUESTS_CSV)
    assert [r for r in requests if r["ok"] != "1"] == [] and failures == []
    [negotiated] = [r for r in requests if r["operation"] == NEGOTIATE]  # the 1.0 call that taught 0.3
    assert negotiated["error_kind"] == "", negotiated
    assert negotiated["error"].startswith(("A2A 1.0 refused (-32009", "A2A 1.0 refused (-32601")), negotiated
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


@pytest.mark.e2e
def test_a_locust_run_whose_tasks_all_complete_through_the_proxy_exits_0(tmp_path):
    """The run that found it: behind the header-dropping proxy every task completed, yet the negotiation's
    refused calls made Locust count failures and exit 1."""
    with header_dropping_proxy() as url:
        done = run_locust(
            tmp_path / "run",
            *("--gateway", "a2a", "--host", url, "--a2a-version", "1.0", "--poll-interval", "0.05"),
            *("--load-profile", "manual", "-u", "2", "-r", "2", "-t", "4s"),
            timeout=120,
        )
    assert done.returncode == OK, done.stderr[-2000:]
    requests = rows(tmp_path / "run", schema.REQUESTS_CSV)
    assert 1 <= sum(r["operation"] == NEGOTIATE for r in requests) <= 2  # one per agent, at most
    tasks = rows(tmp_path / "run", schema.TASKS_CSV)
    assert tasks and {t["status"] for t in tasks} <= {"done", "unfinished"}
