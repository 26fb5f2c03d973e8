"""A target the kit starts: healthy before load, one line when it is not, its whole process group stopped
after, and no target outliving a kit that is killed. Real processes (the simulator, small Python
servers), nothing mocked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import psutil
import pytest

from lifecycle.target import TargetError, free_port, simulator_command, start_target, stop_target
from tests.locust_runs import wait_for
from tests.paths import REPO

pytestmark = pytest.mark.e2e

# A server that starts a child (a gateway's worker) in its own process group, then serves /health.
WITH_WORKER = textwrap.dedent(
    """
    import http.server, subprocess, sys
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200); self.end_headers()
        def log_message(self, *a):
            pass
    http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
    """
)


def gone(pid: int) -> bool:
    """Exited (a zombie waiting for whoever adopted it counts: it runs nothing)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_target_is_healthy_when_started_and_its_whole_group_is_gone_after_stop():
    port = free_port()
    target = start_target([sys.executable, "-c", WITH_WORKER, str(port)], f"http://127.0.0.1:{port}")
    group = [target.pid, *(c.pid for c in psutil.Process(target.pid).children(recursive=True))]
    assert len(group) == 2, group
    assert stop_target(target) == -signal.SIGTERM
    wait_for(lambda: all(gone(pid) for pid in group), 10, "the target's worker to exit")


def test_a_target_that_exits_during_start_up_gives_one_line_with_its_last_words():
    command = [sys.executable, "-c", "import sys; sys.exit('config.yaml: no such model gpt-x')"]
    with pytest.raises(TargetError) as raised:
        start_target(command, f"http://127.0.0.1:{free_port()}", timeout_s=10)
    assert str(raised.value) == "target exited with code 1 during start-up: config.yaml: no such model gpt-x"


def test_a_target_that_never_gets_healthy_is_stopped_and_named():
    port = free_port()
    command = [sys.executable, "-c", "import time; time.sleep(60)", f"never-healthy-{port}"]  # ours alone
    with pytest.raises(TargetError, match=f"not healthy at http://127.0.0.1:{port}/health after 1 s"):
        start_target(command, f"http://127.0.0.1:{port}", timeout_s=1)
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == command]
    assert leftovers == []


def test_a_missing_program_is_one_line():
    with pytest.raises(TargetError, match="cannot start target 'no-such-gateway-binary'"):
        start_target(["no-such-gateway-binary"], f"http://127.0.0.1:{free_port()}")


def test_a_target_does_not_outlive_a_kit_killed_with_sigkill():
    """The kit here is a small process that starts the simulator and is then SIGKILLed: it runs no
    cleanup, and the kernel's parent-death signal must still end the target."""
    port = free_port()
    kit = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from lifecycle.target import *; "
            f"t = start_target(simulator_command({port}), 'http://127.0.0.1:{port}'); "
            "print(t.pid, flush=True); sys.stdin.readline()",
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    target_pid = int(kit.stdout.readline())
    assert psutil.Process(target_pid).cmdline()[:3] == simulator_command(port)[:3]
    kit.kill()
    kit.wait(10)
    wait_for(lambda: gone(target_pid), 15, "the target to exit after the kit's death")
