"""A profile that ends at 0 agents waits for the agents its last ramp-down stopped: their on_stop (deleting
a session on the gateway, writing its row) finishes before the run ends. A ramp-down kills an agent that
waits between tasks; Locust then no longer counts it, and its own stop waits only for the agents it
counts. A churn run against OpenClaw lost its last cycle's "closed" rows that way (a delete takes ~1.5 s).

A real Locust runner in this process; agents of the kit's base whose on_stop takes a known time, all of
them waiting between tasks when the ramp-down comes, as agents with a think time mostly are.
"""

from __future__ import annotations

import time

import gevent
import pytest
from locust import constant, task
from locust.env import Environment

from agents.base import KitAgent
from agents.run_context import new_context
from agents.settings import AgentSettings
from kit.load import await_ramped_down
from tests.locust_runs import wait_for

pytestmark = pytest.mark.e2e  # a Locust runner and its greenlets, real time
AGENTS = 4
ON_STOP_S = 0.5
STOP_TIMEOUT_S = 10.0


class Closing(KitAgent):
    """Waits between instant tasks; closes its session in on_stop, which takes ON_STOP_S."""

    host = "http://127.0.0.1:9"  # never called: the task makes no request
    wait_time = constant(60)
    closed: list[str] = []

    @task
    def work(self) -> None:
        pass

    def on_stop(self) -> None:
        gevent.sleep(ON_STOP_S)
        Closing.closed.append(self.agent_id)
        super().on_stop()


@pytest.fixture
def ramped_down():
    """A local runner whose agents, waiting between tasks, a ramp-down to 0 has just killed."""
    Closing.closed = []
    environment = Environment(user_classes=[Closing], stop_timeout=STOP_TIMEOUT_S)
    new_context(environment, AgentSettings())
    runner = environment.create_local_runner()
    runner.start(AGENTS, spawn_rate=100)
    wait_for(lambda: runner.user_count == AGENTS, 10, f"{AGENTS} agents waiting")
    gevent.spawn(runner.start, 0, 100)
    wait_for(lambda: not sum(runner.user_classes_count.values()), 10, "the ramp-down's kills")
    yield environment
    runner.quit()
    runner.user_greenlets.join(timeout=STOP_TIMEOUT_S)  # no late on_stop reaches the next test's list


def test_locusts_stop_alone_ends_before_the_stopping_agents_close(ramped_down):
    ramped_down.runner.stop()  # the test's premise, as Locust 2.47 does it
    assert len(Closing.closed) < AGENTS


def test_the_profiles_end_waits_for_every_stopping_agent_to_close(ramped_down):
    started = time.monotonic()
    await_ramped_down(ramped_down)
    ramped_down.runner.stop()
    assert len(Closing.closed) == AGENTS
    assert time.monotonic() - started < STOP_TIMEOUT_S / 2  # waited for them, not the stop-timeout


def test_agents_still_counted_are_left_to_locusts_own_stop():
    """A profile that ends with agents running does not wait here (they would never stop by themselves):
    Locust's own stop stops them and waits."""
    environment = Environment(user_classes=[Closing], stop_timeout=STOP_TIMEOUT_S)
    new_context(environment, AgentSettings())
    runner = environment.create_local_runner()
    runner.start(2, spawn_rate=100)
    wait_for(lambda: runner.user_count == 2, 10, "2 agents running")
    started = time.monotonic()
    await_ramped_down(environment)
    assert time.monotonic() - started < STOP_TIMEOUT_S / 2  # not the stop-timeout's wait
    runner.quit()
