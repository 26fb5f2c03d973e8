"""Process plumbing shared by the gateway and its workers: die with the parent, stop children for sure.

Nothing escapes a test run: every child the simulator starts either has a parent-death signal or polls its
gateway's pid. This module must not know about agents or tasks.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time

_PR_SET_PDEATHSIG = 1


def die_with_parent(expected_parent: int) -> None:
    """Ask the kernel to SIGKILL us when our parent exits; exit now if it already has (the race)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: workers still poll the gateway pid
    if os.getppid() != expected_parent:
        os._exit(1)


def alive(pid: int) -> bool:
    """True while `pid` exists (zombies count as alive until reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_and_reap(pid: int, reap: bool) -> None:
    """SIGKILL `pid` and, if it is our child (`reap`), collect it so no zombie stays in the tree."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    if reap:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def sleep_while_alive(seconds: float, gateway_pid: int, step: float = 0.1) -> bool:
    """Sleep up to `seconds`, polling the gateway; False as soon as it is gone (detached workers)."""
    deadline = time.monotonic() + seconds
    while True:
        if not alive(gateway_pid):
            return False
        left = deadline - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(step, left))
