"""Start and stop a simulated gateway as a child process, for tests and for the kit's own runs.

Waits on the ready line (with a deadline, never a fixed sleep) and stops the whole process group, so no
worker survives. Must not set knobs itself: callers pass them as command-line arguments.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from contract.child_env import kit_module_command, kit_module_env
from simgateway.app import READY_PREFIX


class GatewayStartError(RuntimeError):
    """The gateway exited or stayed silent instead of printing its ready line."""


@dataclass
class RunningGateway:
    url: str
    proc: subprocess.Popen

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, wait, then SIGKILL the process group; returns the gateway's exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # stragglers in our own session only
        except ProcessLookupError:
            pass
        code = self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        return code


def start(
    knob_args: list[str], timeout: float = 15.0, port: int = 0, cwd: str | None = None
) -> RunningGateway:
    """Run `python -m simgateway --port PORT *knob_args` in a new session (in `cwd`, default this
    process's working directory) and wait until it listens."""
    cmd = kit_module_command("simgateway", "--port", str(port), *knob_args)
    env = kit_module_env()
    with tempfile.TemporaryFile("w+") as stderr:  # a file, not a pipe: a chatty gateway never blocks
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, start_new_session=True, cwd=cwd
        )
        line = _read_line(proc, timeout)
        if not line.startswith(READY_PREFIX):
            RunningGateway("", proc).stop()
            stderr.seek(0)
            err = stderr.read().strip().splitlines()
            raise GatewayStartError(f"simgateway did not start: {err[-1] if err else 'no ready line'}")
    return RunningGateway(line.strip()[len(READY_PREFIX) :], proc)


def _read_line(proc: subprocess.Popen, timeout: float) -> str:
    """The first stdout line, or "" if none comes within `timeout` (the gateway prints it whole)."""
    assert proc.stdout is not None  # started with stdout=PIPE
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            return ""
    return proc.stdout.readline()


@contextlib.contextmanager
def running(knob_args: list[str], timeout: float = 15.0) -> Iterator[RunningGateway]:
    """A gateway for the duration of a `with` block; stopped (process group killed) however it ends."""
    gateway = start(knob_args, timeout)
    try:
        yield gateway
    finally:
        gateway.stop()


def wait_for(predicate: Callable[[], object], timeout: float, what: str, step: float = 0.02) -> object:
    """Poll `predicate` until it returns a truthy value (returned) or raise TimeoutError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(step)
