"""The end of a distributed run is not a lost worker, and a worker the master stopped hears its quit.

Locust's master drops each worker from its list when it reports stopped and lists it again when it
reports ready, after sleeping the stop-timeout; a run that ended between the two counted every such worker
"quit" (exit code 7 on a run that delivered its load), and its workers, deaf to the master's quit during
that sleep, lingered a minute waiting for a heartbeat. A worker that quits while the test runs is a loss.

A real master and real workers (Locust's own runners over loopback) in this process.
"""

from __future__ import annotations

import time

import gevent
import pytest
from locust import User, constant, task
from locust.env import Environment

from kit import fleet
from kit.delivery import FleetWatch
from lifecycle.target import free_port
from tests.locust_runs import wait_for

pytestmark = pytest.mark.e2e  # a Locust master and workers on loopback
WORKER_STOP_TIMEOUT_S = 10.0  # Locust's worker sleeps this long after a stop before it reports ready


class Idle(User):
    wait_time = constant(0.1)

    @task
    def nothing(self) -> None:
        pass


@pytest.fixture
def fleet_of():
    """fleet_of(n, kit=False): a master runner and n connected workers (with the kit's stop handling when
    `kit`), quit after."""
    runners = []

    def start(n: int, kit: bool = False):
        port = free_port()
        master_env = Environment(user_classes=[Idle], stop_timeout=WORKER_STOP_TIMEOUT_S)  # sent on spawn
        master = master_env.create_master_runner("127.0.0.1", port)
        runners.append(master)
        workers = []
        for _ in range(n):
            env = Environment(user_classes=[Idle])
            worker = env.create_worker_runner("127.0.0.1", port)
            if kit:
                fleet.follow_master_stop(env)
            runners.append(worker)
            workers.append(worker)
        wait_for(lambda: len(master.clients.ready) == n, 10, f"{n} workers ready")
        return master, workers

    yield start
    for runner in reversed(runners):
        runner.quit()


def running(master, users: int) -> FleetWatch:
    master.start(users, spawn_rate=100)
    wait_for(lambda: master.user_count == users, 10, f"{users} users running")
    watch = FleetWatch(master, time.time())
    watch.poll(time.time())
    return watch


def test_workers_that_report_stopped_at_the_end_are_not_lost(fleet_of):
    master, _workers = fleet_of(2)
    watch = running(master, 4)
    gevent.spawn(master.stop)
    wait_for(lambda: not master.clients.all, 10, "both workers reported stopped")  # ready in 10 s
    assert watch.poll(time.time()) == []
    assert watch.losses == []


def test_the_last_worker_quitting_mid_run_is_a_loss(fleet_of):
    master, [worker] = fleet_of(1)
    watch = running(master, 2)
    worker.environment.events.quitting.fire(environment=worker.environment)  # as Locust's shutdown does:
    worker.quit()  # the worker sends quit, the master drops it, then stops the test (no worker left)
    wait_for(lambda: not master.clients.all, 10, "the worker gone")
    [loss] = watch.poll(time.time())
    assert loss.how == "quit" and loss.agents == 2
    assert watch.none_left


def test_a_worker_the_kit_leads_reports_ready_at_once_after_a_stop(fleet_of):
    master, [worker] = fleet_of(1, kit=True)
    running(master, 2)
    started = time.monotonic()
    gevent.spawn(master.stop)
    wait_for(lambda: worker.worker_state == "ready" and master.clients.ready, 10, "the worker ready again")
    assert time.monotonic() - started < WORKER_STOP_TIMEOUT_S / 2  # not after Locust's sleep
