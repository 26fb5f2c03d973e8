"""Drive Locust users in-process (a real Environment and LocalRunner) and collect their request events.
Shared by tests; not a test module itself."""

from __future__ import annotations

import time

import gevent
from locust.env import Environment


def collect(user_class, host: str, users: int, count: int, timeout_s: float = 30.0) -> list[dict]:
    """Start `users` instances at once; return the first `count` request events (kwargs of the event)."""
    env = Environment(user_classes=[user_class], host=host)
    seen: list[dict] = []
    env.events.request.add_listener(lambda **kw: seen.append(kw))
    runner = env.create_local_runner()
    runner.start(users, spawn_rate=users)
    deadline = time.monotonic() + timeout_s
    while len(seen) < count and time.monotonic() < deadline:
        gevent.sleep(0.05)
    runner.quit()
    assert len(seen) >= count, f"only {len(seen)} requests in {timeout_s} s"
    return seen[:count]
