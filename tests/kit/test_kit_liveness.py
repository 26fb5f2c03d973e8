"""Liveness rules against a real HTTP server and real processes: a pid gone is dead at once; a health
check that fails (or goes unanswered) is dead only after it failed without a break for the timeout."""

from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kit.liveness import Liveness

pytestmark = pytest.mark.e2e  # real servers and processes


@pytest.fixture
def health_server():
    """A keep-alive server whose /health answers `state["status"]`; yields (url, state), where
    state["peers"] lists the client address of every request."""
    state = {"status": 200, "peers": []}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            state["peers"].append(self.client_address)
            self.send_response(state["status"])
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", state
    server.shutdown()
    server.server_close()


def test_a_failing_health_check_is_dead_only_after_the_timeout_without_a_break(health_server):
    url, state = health_server
    live = Liveness([], f"{url}/health", timeout_s=5.0)
    assert live.dead(100.0) is None
    state["status"] = 503
    assert live.dead(101.0) is None and live.dead(105.9) is None
    state["status"] = 200
    assert live.dead(106.5) is None  # a break resets the clock
    state["status"] = 503
    assert live.dead(107.0) is None
    assert live.dead(112.0) == f"target not healthy at {url}/health for 5 s (HTTP 503)"


def test_health_probes_share_one_client_and_its_connection(health_server):
    """A new client per probe builds a TLS context each time: tens of ms of CPU that hold every stream
    read of the load generator's loop once a second (it cost +4 ms of TTFT at 10 streams here)."""
    url, state = health_server
    live = Liveness([], f"{url}/health", timeout_s=5.0)
    for now in range(3):
        assert live.dead(float(now)) is None
    live.close()
    assert len(state["peers"]) == 3 and len(set(state["peers"])) == 1, state["peers"]


def test_no_health_path_counts_any_answer_and_a_closed_port_is_not_one(health_server):
    url, state = health_server
    state["status"] = 404
    assert Liveness([], url, 1.0, any_answer=True).dead(0.0) is None
    closed = Liveness([], "http://127.0.0.1:9", 1.0, any_answer=True, answered=True)
    assert closed.dead(0.0) is None and closed.dead(1.0).endswith("for 1 s (ConnectError)")


def test_a_host_that_never_answered_is_named_so_not_dead(health_server):
    """No HTTP answer ever (a --no-host-check host with nothing there): "never answered"; once one
    came, a later silence is a death."""
    never = Liveness([], "http://127.0.0.1:9/health", 1.0)
    assert never.dead(0.0) is None
    assert never.dead(1.0) == "target never answered at http://127.0.0.1:9/health in 1 s (ConnectError)"
    url, state = health_server
    once = Liveness([], f"{url}/health", 1.0)
    assert once.dead(0.0) is None
    state["status"] = 503  # an answer all the same: not "never answered"
    assert once.dead(0.5) is None and once.dead(1.5).startswith("target not healthy at")


@pytest.mark.e2e
def test_a_pid_gone_or_a_zombie_is_dead_at_once():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    live = Liveness([child.pid], None, 10.0)
    assert live.dead(0.0) is None
    child.kill()
    child.wait()  # reaped: the pid is gone
    assert live.dead(0.1) == f"target pid {child.pid} is gone"
