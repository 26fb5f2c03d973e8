"""Stopping the workers' agents from the master of a distributed run: gracefully (their --stop-timeout)
at a run's end, or at once at a second signal. Sends and handles one custom message; judges nothing.

Locust's own `stop` message blocks a worker's message loop for the stop-timeout (twice: the stop, then
a sleep), so a later message could not cut it short. This one is handled in a greenlet of its own
(`register_message(..., concurrent=True)`), so a stop at once can overtake a graceful one.
"""

from __future__ import annotations

import time

import gevent
from locust.runners import MasterRunner

STOP_MESSAGE = "loadkit_stop_agents"
POLL_S = 0.5


def follow_master_stop(environment) -> None:
    """On a worker: stop the agents when the master says so, gracefully or at once."""

    def on_stop(msg, **_kwargs) -> None:
        runner = environment.runner
        if msg.data.get("now"):
            environment.stop_timeout = 0
            runner.user_greenlets.kill(block=False)
            return
        if runner.spawning_greenlet is not None:
            runner.spawning_greenlet.kill(block=True)
        runner.stop_users(dict(runner.user_classes_count))
        environment.stop_timeout = 0  # no agent is left: Locust's own stop that follows need not wait

    def stopped(**_kwargs) -> None:
        """Locust's own stop: its agents are gone now. It sleeps the stop-timeout next before it reports
        ready, deaf meanwhile to the master's quit (the worker then lingers a minute, waiting for a
        heartbeat): that sleep need not be. The next spawn message sets the stop-timeout again."""
        environment.stop_timeout = 0

    environment.runner.register_message(STOP_MESSAGE, on_stop, concurrent=True)
    environment.events.test_stop.add_listener(stopped)


def stop_workers(runner, now: bool) -> None:
    """On a master: tell every worker to stop its agents (`now`: kill them, their on_stop still runs)."""
    if isinstance(runner, MasterRunner) and runner.clients.all:
        runner.send_message(STOP_MESSAGE, {"now": now})


def drain(runner: MasterRunner, timeout_s: float) -> None:
    """Stop the workers' agents gracefully and wait until they report none left: the report that says
    so carries their last rows."""
    stop_workers(runner, now=False)
    deadline = time.monotonic() + timeout_s
    while runner.user_count and time.monotonic() < deadline:
        gevent.sleep(POLL_S)
