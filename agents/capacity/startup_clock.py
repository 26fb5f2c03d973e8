"""Where capacity and churn time a session's start-up: one dedicated OS thread with an HTTP client of its
own, off the load generator's event loop, so the Locust process's own work cannot add to the figure.

Runs what it is given and hands the result back to the waiting greenlet; it records no row itself (Locust's
events and stats belong to the loop: callers report the rows after).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import gevent
import httpx
from gevent.resolver.blocking import Resolver as BlockingResolver
from gevent.threadpool import ThreadPool

T = TypeVar("T")
# While a create runs, how long the clock's thread waits at most for the interpreter lock after each
# reply before the loop's thread must hand it over (Python's default: 5 ms, which the figure would carry).
GIL_SWITCH_S = 0.0005


class StartupClock:
    """One dedicated OS thread, with an HTTP client of its own, on which each session's create-to-ready
    runs and is timed: the load generator's event loop (its other agents, the driver's memory readings,
    row flushes, health checks) cannot delay a reply's reading there, as it can a greenlet's. Measured
    here: 170 ms read for a 40 ms start-up on the loop with 50 streams in the process, vs 50 ms by a
    plain client in another process (tests/agents/test_capacity_startup_clock.py)."""

    def __init__(self, make_client: Callable[[], httpx.Client]) -> None:
        self._make_client = make_client
        self._thread = ThreadPool(1)
        self.client: httpx.Client | None = None  # made, used and closed on the clock's thread only

    def run(self, work: Callable[..., T], *args: Any) -> T:
        """`work(*args)` on the clock's thread; this greenlet waits (others run), exceptions come back."""
        previous = sys.getswitchinterval()
        sys.setswitchinterval(GIL_SWITCH_S)
        try:
            return self._thread.apply(self._on_thread, (work, args))
        finally:
            sys.setswitchinterval(previous)

    def _on_thread(self, work: Callable[..., T], args: tuple) -> T:
        if self.client is None:
            # this thread's own gevent hub resolves names in the thread itself: its default hands each
            # lookup to yet another thread, a hop that waits for the interpreter lock like any wake-up
            gevent.get_hub().resolver = BlockingResolver()
            self.client = self._make_client()
        return work(*args)

    def close(self) -> None:
        if self.client is not None:
            self._thread.apply(self.client.close)
            self.client = None
        self._thread.kill()
