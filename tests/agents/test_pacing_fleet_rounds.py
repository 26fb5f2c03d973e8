"""Rounds across Locust workers, without processes: the master's round clock grants a round's tasks once
its agents run, a worker takes only what it was granted, and every report moves the clock."""

from __future__ import annotations

from kit.fleet import FleetRounds, WorkerRounds
from scenarios.rounds import RoundsParams, RoundsPlan


def fleet(levels: tuple[int, ...]) -> FleetRounds:
    plan = RoundsPlan(RoundsParams(levels=levels, baseline_s=0))
    plan.start(0.0)
    return FleetRounds(plan)


def test_a_round_is_granted_once_after_its_agents_are_spawned_as_locust_spread_them():
    clock = fleet((3, 3))
    assert clock.due_grants(None) == {}  # still spawning
    assert clock.due_grants({"a": 1, "b": 0}) == {}  # not all of round 1's agents yet
    assert clock.due_grants({"a": 2, "b": 1}) == {"a": 2, "b": 1}
    assert clock.grant_doc(2) == {"round": 1, "tasks": 2}
    assert clock.due_grants({"a": 2, "b": 1}) == {}  # granted once


def test_worker_reports_count_every_task_and_close_the_round_for_the_next_grant():
    clock = fleet((2, 2))
    sent: list[dict] = []
    worker = WorkerRounds(sent.append)
    worker.grant(1, clock.due_grants({"a": 2})["a"])
    tickets = [worker.take(1.0), worker.take(1.0)]
    assert worker.take(1.0) is None  # no more than granted
    for ticket in tickets:
        worker.finished(ticket, 2.0)
    for i, data in enumerate(sent):
        clock.on_task(data, 2.0 + i)
    first = clock.plan.rounds[0]
    assert (first.submitted, first.finished, first.end_reason) == (2, 2, "tasks finished")
    assert clock.plan.current.round == 2 and clock.due_grants({"a": 2}) == {"a": 2}  # same agents
    clock.on_task({"round": 7, "event": "finished"}, 9.0)  # a round that does not exist: ignored
    assert clock.plan.current.round == 2
