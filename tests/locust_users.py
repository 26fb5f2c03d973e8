"""Drive Locust users in-process (a real Environment and LocalRunner) and collect their request events.
Shared by tests; not a test module itself."""

from __future__ import annotations

import time

import gevent
from locust.env import Environment


def collect(
    user_class, host: str, users: int, count: int, timeout_s: float = 30.0, steady: bool = False
) -> list[dict]:
    """Start `users` instances at once; return the first `count` request events (kwargs of the event).

    steady: only requests sent once every user is running. Spawning a user (its client, its first
    connection) holds this process's event loop for milliseconds, which a stream read meanwhile carries."""
    env = Environment(user_classes=[user_class], host=host)
    seen: list[dict] = []
    spawned: list[float] = []
    env.events.spawning_complete.add_listener(lambda **_: spawned.append(time.time()))
    env.events.request.add_listener(
        lambda **kw: seen.append(kw) if not steady or (spawned and sent_at(kw) >= spawned[0]) else None
    )
    runner = env.create_local_runner()
    runner.start(users, spawn_rate=users)
    deadline = time.monotonic() + timeout_s
    while len(seen) < count and time.monotonic() < deadline:
        gevent.sleep(0.05)
    runner.quit()
    assert len(seen) >= count, f"only {len(seen)} requests in {timeout_s} s"
    return seen[:count]


def sent_at(event: dict) -> float:
    """When the request was sent (epoch s): the kit's record says it; Locust's own users give start_time."""
    record = (event.get("context") or {}).get("kit_record")
    return record.ts if record is not None else event["start_time"]
