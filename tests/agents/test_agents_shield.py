"""Shielded gateway work: a killed caller waits for it to land, through repeated kills, up to its deadline."""

from __future__ import annotations

import gevent
import pytest
from gevent import GreenletExit
from gevent.event import Event

from agents.shield import shielded


def test_work_lands_through_two_kills_of_its_caller_and_the_kill_is_raised_after():
    started, release, landed = Event(), Event(), []

    def work() -> str:
        started.set()
        release.wait()
        landed.append("closed")
        return "closed"

    caller = gevent.spawn(shielded, work, 5.0)
    started.wait(5)
    caller.kill(block=False)
    caller.kill(block=False)  # Locust kills again the agents alive after its stop-timeout
    gevent.sleep(0)
    assert not caller.ready() and not landed
    release.set()
    caller.join(5)
    assert landed == ["closed"] and isinstance(caller.value, GreenletExit)


def test_a_kill_waits_no_longer_than_the_deadline():
    caller = gevent.spawn(shielded, lambda: gevent.sleep(30), 0.05)
    gevent.sleep(0)
    caller.kill(block=False)
    caller.join(5)
    assert caller.ready() and isinstance(caller.value, GreenletExit)


def test_unkilled_it_returns_the_value_or_raises_the_error():
    assert shielded(lambda: 42, 1.0) == 42
    with pytest.raises(ZeroDivisionError):
        shielded(lambda: 1 / 0, 1.0)
