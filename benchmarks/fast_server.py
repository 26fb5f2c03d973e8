"""Start one of the benchmarks' fast targets (fast_chat.py, fast_mcp.py: fixed answers, so the load
generator is what a benchmark measures) on a free loopback port, for the length of a `with` block."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from lifecycle.target import free_port  # noqa: E402


@contextmanager
def running(script: str, cpu: int | None = None) -> Iterator[str]:
    """benchmarks/`script` on a free port (pinned to core `cpu` if given), until the block ends; its URL
    once it listens."""
    port = free_port()
    command = [sys.executable, str(HERE / script), str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        if cpu is not None:
            os.sched_setaffinity(server.pid, {cpu})
        assert server.stdout is not None and server.stdout.readline().startswith("listening")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(10)
