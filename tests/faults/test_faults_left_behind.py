"""Nothing left behind, nothing hanging: a refused `--processes 2` start leaves no process of the run alive
(its forked workers included), and a --host whose every answer drips its body a byte a second neither
hangs the start nor the run's probes. Real `locust -f locustfile.py --headless` runs.
"""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import psutil
import pytest

from contract import exit_codes
from tests.locust_runs import run_locust

pytestmark = [pytest.mark.faults, pytest.mark.e2e]


def run_processes(marker: str) -> list[psutil.Process]:
    """Processes alive (not zombies) whose command line names this run's directory."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and marker in " ".join(proc.info["cmdline"] or []):
            found.append(proc)
    return found


@pytest.fixture
def two_sleepers(tmp_path) -> Iterator[str]:
    """Two processes in unrelated trees (other working directories) that one pattern matches."""
    marker = f"sleeper-{uuid.uuid4().hex[:8]}"
    sleepers = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        command = [sys.executable, "-c", "import time; time.sleep(120)", marker]
        sleepers.append(subprocess.Popen(command, cwd=tmp_path / name, start_new_session=True))
    yield marker
    for sleeper in sleepers:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize("refused", ["capacity", "churn", "an-ambiguous-target"])
def test_a_refused_processes_start_leaves_no_process_of_the_run(tmp_path, refused, two_sleepers):
    """Refused by every process (a one-process profile), or by the master alone once its workers are
    forked and waiting for it (the sampler's target matches two unrelated trees)."""
    run_dir = tmp_path / f"refused-{refused}"
    args = (
        ("--load-profile", refused) if refused != "an-ambiguous-target" else ("--target-match", two_sleepers)
    )
    done = run_locust(run_dir, "--processes", "2", *args, timeout=90)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr[-2000:]
    assert ("runs in one process" if refused != "an-ambiguous-target" else "unrelated") in done.stderr
    time.sleep(2)
    assert not run_processes(str(run_dir)), [p.info["cmdline"] for p in run_processes(str(run_dir))]


class Drip(http.server.BaseHTTPRequestHandler):
    """Every answer: 200, a 600-byte body promised, one byte a second."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", "600")
        self.end_headers()
        try:
            for _ in range(600):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(1)
        except OSError:
            pass  # the client gave up: what the test wants

    do_POST = do_GET  # noqa: N815

    def log_message(self, *_args) -> None:
        pass


@pytest.fixture
def dripping() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Drip)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_host_that_drips_its_answers_is_checked_and_probed_in_bounded_time(tmp_path, dripping):
    started = time.monotonic()
    done = run_locust(
        tmp_path / "run",
        *("ChatAgent", "--host", dripping, "--load-profile", "smoke", "--peak-users", "1"),
        *("--duration", "3s", "--request-timeout", "2s", "--stop-timeout", "1"),
        timeout=120,
    )
    took = time.monotonic() - started
    assert took < 90, done.stderr[-2000:]
    assert done.returncode != exit_codes.BAD_INPUT, done.stderr[-2000:]  # it answers: the check passes
    assert (tmp_path / "run" / "run.json").exists()
