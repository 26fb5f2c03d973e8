"""A locustfile for benchmarks only, loaded beside the kit's (`-f locustfile.py,benchmarks/loop_lag.py`):
a greenlet that sleeps 5 ms at a time and records how late it wakes, i.e. how long the Locust process's
event loop was busy or descheduled. Written as JSON to $LOOP_LAG_OUT when Locust quits."""

from __future__ import annotations

import json
import os
import time

import gevent
from locust import events

SLEEP_S = 0.005
_LAGS: list[tuple[float, float]] = []  # (UTC ts, ms late)


def _probe() -> None:
    while True:
        started = time.perf_counter()
        gevent.sleep(SLEEP_S)
        _LAGS.append((time.time(), (time.perf_counter() - started - SLEEP_S) * 1000))


@events.init.add_listener
def _start(environment, **_kwargs) -> None:
    gevent.spawn(_probe)


@events.quitting.add_listener
def _write(environment, **_kwargs) -> None:
    with open(os.environ["LOOP_LAG_OUT"], "w") as f:
        json.dump(_LAGS, f)
