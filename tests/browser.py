"""Headless Chromium and a Locust web UI for the browser tests: one set of flags, one launcher.
Shared by the tests; not a test module itself."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from lifecycle.target import free_port
from tests.locust_runs import REPO, wait_for

# quiet, offline, headless: no first-run dialogs, no background fetches
HEADLESS_CHROMIUM = [
    "chromium",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def web_ui_command(run_dir: Path, port: int, *extra: str) -> list[str]:
    """`locust -f locustfile.py` with its web UI on 127.0.0.1:port."""
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--web-host", "127.0.0.1"]
    return cmd + ["--web-port", str(port), "--run-dir", str(run_dir), *extra]


@contextmanager
def running_web_ui(
    run_dir: Path, *extra: str, stderr=subprocess.DEVNULL, ready_s: float = 60
) -> Iterator[str]:
    """`locust -f locustfile.py` with its web UI on a free loopback port; killed if SIGTERM is ignored."""
    port = free_port()
    proc = subprocess.Popen(
        web_ui_command(run_dir, port, *extra), cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(url), ready_s, "the web UI")
        yield url
    finally:
        terminate(proc)


def terminate(proc: subprocess.Popen, timeout_s: float = 15) -> None:
    """SIGTERM (the kit ends its run and quits), then SIGKILL if it is ignored."""
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout_s)
