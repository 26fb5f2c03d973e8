"""Run the kit as a user does, `locust -f locustfile.py --headless ...`, in a subprocess, and wait on
what it writes. Shared by the end-to-end tests; not a test module itself."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.paths import REPO

LOCUST = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--headless"]


def locust_command(run_dir: Path, *args: str) -> list[str]:
    return [*LOCUST, "--run-dir", str(run_dir), *args]


def run_locust(run_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        locust_command(run_dir, *args), cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def chat_smoke_args(duration: str, sim_args: str, *extra: str) -> tuple[str, ...]:
    """Four chat agents on the smoke profile against a simulator with the given knobs."""
    smoke = ("--load-profile", "smoke", "--peak-users", "4", "--duration", duration)
    return ("ChatAgent", *smoke, "--sim-args", sim_args, *extra)


def chat_smoke(run_dir: Path, duration: str, sim_args: str, *extra: str) -> subprocess.CompletedProcess:
    return run_locust(run_dir, *chat_smoke_args(duration, sim_args, *extra))


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def csv_rows(path: Path) -> int:
    try:
        return max(0, len(path.read_text().splitlines()) - 1)
    except OSError:
        return 0
