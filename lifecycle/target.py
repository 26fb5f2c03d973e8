"""Lifecycle of a target the kit starts itself: launch a command, wait until healthy, stop it after.

A fresh target per run keeps memory that only grows from poisoning the next run. The target runs in
its own process group so stopping it takes its workers too. Knows nothing of Locust.
"""

from __future__ import annotations

import ctypes
import os
import shlex
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from contract import gevent_compat  # noqa: F401 - before any httpx client exists
from contract.child_env import kit_module_command, kit_module_env
from contract.errors import InputError
from contract.http_probe import probe_get

_PR_SET_PDEATHSIG = 1
HEALTH_READ_S = 2.0  # a health answer's whole time (the client bounds each read to as much)
HEALTH_POLL_S = 0.02  # a refused poll costs ~1 ms CPU; every run waits for its target's health


class TargetError(InputError):
    """The target could not be started or reached; the message is one line for the user."""


@dataclass
class Target:
    url: str
    pid: int | None = None
    command: list[str] | None = None
    popen: subprocess.Popen | None = None

    @property
    def started_by_kit(self) -> bool:
        return self.popen is not None

    def exit_code(self) -> int | None:
        """None while running (or when not ours); the exit code once it has died."""
        return self.popen.poll() if self.popen is not None else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def simulator_command(port: int, sim_args: str = "") -> list[str]:
    return kit_module_command("simgateway", "--port", str(port), *shlex.split(sim_args or ""))


def start_simulator(port: int, sim_args: str = "", timeout_s: float = 30.0) -> Target:
    """The kit's simulator on 127.0.0.1:`port`, healthy; started as the kit starts its own modules (from
    any working directory, the repo's packages first)."""
    url = f"http://127.0.0.1:{port}"
    return start_target(simulator_command(port, sim_args), url, "/health", timeout_s, kit_module_env())


def target_command(template: str, port: int) -> list[str]:
    """A user's --target-cmd with `{port}` replaced by the port the kit chose."""
    return shlex.split(template.replace("{port}", str(port)))


def start_target(
    command: list[str],
    url: str,
    health_path: str = "/health",
    timeout_s: float = 30.0,
    env: dict[str, str] | None = None,
    cancelled: Callable[[], bool] = lambda: False,
) -> Target:
    """Start `command`, wait until `url + health_path` answers 2xx; raise TargetError otherwise (also
    once `cancelled()`: a signal during start-up), the process stopped."""
    stderr = tempfile.TemporaryFile()
    try:
        popen = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
            preexec_fn=_terminate_with_parent,
            env=env,
        )
    except OSError as exc:
        raise TargetError(f"cannot start target {command[0]!r}: {exc.strerror or exc}") from exc
    target = Target(url=url, pid=popen.pid, command=command, popen=popen)
    try:
        wait_healthy(url + (health_path or ""), timeout_s, target, stderr, cancelled)
    except TargetError:
        stop_target(target)
        raise
    return target


def wait_healthy(
    health_url: str,
    timeout_s: float,
    target: Target | None = None,
    stderr=None,
    cancelled: Callable[[], bool] = lambda: False,
) -> None:
    """Poll the health URL until 2xx (any HTTP answer when no health path was given, the URL then being
    the bare target); fail fast if the process we started exits meanwhile, or the start is cancelled."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    with httpx.Client(timeout=2.0) as client:  # one client: each new one builds a TLS context (~20 ms CPU)
        while time.monotonic() < deadline:
            if cancelled():
                raise TargetError("the target's start-up was interrupted")
            code = target.exit_code() if target else None
            if code is not None:
                raise TargetError(f"target exited with code {code} during start-up: {_last_line(stderr)}")
            try:
                response = probe_get(client, health_url, HEALTH_READ_S)
                if response.status < 300 or health_url == (target.url if target else None):
                    return
                last = f"HTTP {response.status}"
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            time.sleep(HEALTH_POLL_S)
    raise TargetError(f"target not healthy at {health_url} after {timeout_s:.0f} s ({last})")


def stop_target(target: Target, timeout_s: float = 10.0) -> int | None:
    """SIGTERM the target's process group, then SIGKILL what is left; returns its exit code."""
    popen = target.popen
    if popen is None:
        return None
    if popen.poll() is None:
        _signal_group(popen.pid, signal.SIGTERM)
        _signal_group(popen.pid, signal.SIGCONT)  # a frozen (SIGSTOPped) target acts on SIGTERM only then
        try:
            popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _signal_group(popen.pid, signal.SIGKILL)
            popen.wait(5)
    _signal_group(popen.pid, signal.SIGKILL)  # stragglers left in the group
    return popen.returncode


def _terminate_with_parent() -> None:
    """In the child before exec: the kernel SIGTERMs the target if the kit dies without stopping it
    (killed, crashed), so no target outlives its run (Linux; elsewhere stop_target still does)."""
    try:
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _last_line(stderr) -> str:
    if stderr is None:
        return "no output"
    stderr.seek(0)
    lines = [line.strip() for line in stderr.read().decode(errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"
