"""Shared helpers for the sampler tests: start controlled child processes, wait on conditions, read CSVs.

Holds no tests. Every process started here is in its own process group, killed by `Children.stop_all`.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tests.paths import REPO

T = TypeVar("T")


def wait_for(condition: Callable[[], T], deadline_s: float = 10.0, what: str = "condition") -> T:
    """Poll until `condition()` is truthy; fail the test with `what` at the deadline."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {deadline_s} s waiting for {what}")


def read_rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def wait_rows(path: Path, n: int, deadline_s: float = 15.0) -> list[dict[str, str]]:
    return wait_for(lambda: (r := read_rows(path)) and len(r) >= n and r, deadline_s, f"{n} rows in {path}")


class Children:
    """Processes a test started; each in its own session so its whole group can be killed."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen] = []

    def python(self, code: str, *args: str, **kw) -> subprocess.Popen:
        return self.start([sys.executable, "-c", code, *args], **kw)

    def sampler(self, *args: str) -> subprocess.Popen:
        """`python -m sampler` at 10 Hz unless `args` give another --interval (the last one wins)."""
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        argv = [sys.executable, "-m", "sampler", "--interval", "0.1", *args]
        return self.start(argv, env=env, stderr=subprocess.PIPE, text=True)

    def start(self, argv: list[str], **kw) -> subprocess.Popen:
        kw.setdefault("stdin", subprocess.PIPE)
        kw.setdefault("stdout", subprocess.PIPE)
        proc = subprocess.Popen(argv, start_new_session=True, **kw)
        self.procs.append(proc)
        return proc

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            proc.wait(10)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream:
                    stream.close()


def tell(proc: subprocess.Popen, line: str = "go") -> str:
    """Send a line to a child and return the line it answers (children signal readiness on stdout)."""
    proc.stdin.write(f"{line}\n".encode())
    proc.stdin.flush()
    return proc.stdout.readline().decode().strip()


# A child that idles until told, then allocates and touches N MiB, answering "done".
ALLOCATOR = """
import sys
print("ready", flush=True)
sys.stdin.readline()
block = bytearray(int(sys.argv[1]) * 1024 * 1024)
block[::4096] = b"\\x01" * len(block[::4096])
print("done", flush=True)
sys.stdin.readline()
"""

# A busy loop reporting `wall cpu_seconds` about every 50 ms.
BUSY = """
import time
end = time.time() + 60
mark = 0.0
while time.time() < end:
    if time.time() >= mark:
        print(time.time(), time.process_time(), flush=True)
        mark = time.time() + 0.05
"""
SLEEPER = "import sys\nprint('ready', flush=True)\nsys.stdin.readline()\n"
