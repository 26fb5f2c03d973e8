"""Gateway work that must land even when its agent is killed: a task's submit, a session's create and the
closes of an agent's sessions. A second Ctrl-C kills every agent at once, Locust kills those still alive
after its stop-timeout, and its stop kills the agents it finds thinking (one may be waking into its next
request just then); killed mid-request, the created task's or session's id was lost (it stayed on the
gateway, with no row) and the closes not yet sent were never sent. Run in a greenlet of its own, the work
lands, up to a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import gevent
from gevent import GreenletExit

T = TypeVar("T")


def shielded(work: Callable[[], T], timeout: float) -> T:
    """`work()` in a greenlet of its own; a kill of the caller waits for it, up to `timeout` seconds
    from the first kill (however many come), then is raised. Its value otherwise; its error raised here,
    in the caller (a StopUser it raises stops the caller's agent, and gevent prints no failed greenlet)."""
    worker = gevent.spawn(_caught, work)
    kill: GreenletExit | None = None
    deadline = float("inf")
    while not worker.ready() and time.monotonic() < deadline:
        try:
            worker.join(None if kill is None else max(0.0, deadline - time.monotonic()))
        except GreenletExit as exc:
            kill = kill or exc
            deadline = min(deadline, time.monotonic() + timeout)
    if kill is not None:
        raise kill
    value, error = worker.get()
    if error is not None:
        raise error
    return value


def _caught(work: Callable[[], T]) -> tuple[T | None, Exception | None]:
    try:
        return work(), None
    except Exception as exc:
        return None, exc
