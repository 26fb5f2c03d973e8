"""Who may start work when, under an open model (arrival rate), a sweep or rounds: tickets agents take.

The base `Pacing` is the closed model: agents loop with their own wait time. Under `--arrival-rate` an
agent takes the next scheduled arrival (dropped when no agent was free in time, k6's dropped_iterations);
a sweep's closed passes let agents go back to back, its rate passes pace arrivals; under rounds an agent
takes a slot in the current round and reports the task finished. In a distributed run the pacing
comes from the master (kit/fleet.py: each worker's share of the arrivals, the round tasks it granted).

Each kind answers what the run asks of it (its arrivals, its rounds, what run.json records of it): the
run never asks a pacing's type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from contract import schema
from scenarios.arrivals import Arrival, Pacer
from scenarios.fit import FitPlan
from scenarios.rounds import RoundsPlan
from scenarios.sweep import CLOSED_PASSES, SweepPlan


@dataclass(frozen=True)
class Ticket:
    """Permission for one unit of work: start no earlier than start_ts (an arrival's due time: its
    lateness is measured from it); `arrival` is the arrival's index, `round` the round to tag it with."""

    start_ts: float | None = None
    round: int | None = None
    arrival: int | None = None


@dataclass(frozen=True)
class ArrivalCounts:
    """An open model's arrivals so far: handed to an agent, dropped (no agent free in time), and when
    the first dropped one was due."""

    issued: int
    dropped: int
    first_dropped_ts: float | None


class RoundGrants(Protocol):
    """A worker's round tasks, as its master grants them (kit/fleet.py)."""

    def grant(self, round_no: int, tasks: int) -> None: ...


class Pacing:
    """What an agent's task is gated by: a ticket to take, its end to report, arrivals dropped so far.
    The base is the closed model (a ticket at once, agents keep their own wait time), and its answers
    are every kind's unless that kind differs: each overrides only where it does."""

    spaces_work = False  # the pacing spaces the work: agents drop their own wait time
    task_agents_only = False  # only the agents that work tasks run (rounds)
    shares_arrivals = False  # in a distributed run each worker paces its share of the arrivals

    def take(self, now: float) -> Ticket | None:
        return Ticket()

    def finished(self, ticket: Ticket, now: float) -> None:
        """Only rounds count a task's end."""

    def dropped(self, now: float) -> int:
        return 0

    def arrivals(self, now: float) -> ArrivalCounts | None:
        """The arrivals issued and dropped by `now`; None: it paces no arrivals."""
        return None

    def rounds_plan(self) -> RoundsPlan | None:
        """The round clock it keeps; None: it paces no rounds here."""
        return None

    def round_grants(self) -> RoundGrants | None:
        """A worker's round tasks granted by its master; None: it takes none."""
        return None

    def row_listeners(self) -> list[Callable[[str, dict], None]]:
        """Listeners it measures rows with: the recorder's rows (a sweep's closed passes), and the
        sampler's as the live judge reads them (a fit's steps)."""
        return []

    def record_end(self, meta: dict, now: float) -> None:
        """Into run.json at the end: what it kept (the rounds' boundaries, the sweep's passes)."""


def arrival_ticket(arrival: Arrival | None) -> Ticket | None:
    return None if arrival is None else Ticket(start_ts=arrival.due_ts, arrival=arrival.index)


class OpenModelPacing(Pacing):
    spaces_work = True
    shares_arrivals = True

    def __init__(self, pacer: Pacer | SweepPlan):
        self.pacer = pacer

    @property
    def issued(self) -> int:
        return self.pacer.issued

    @property
    def first_dropped_ts(self) -> float | None:
        return self.pacer.first_dropped_ts

    def take(self, now: float) -> Ticket | None:
        return arrival_ticket(self.pacer.claim(now))

    def dropped(self, now: float) -> int:
        return self.pacer.settle(now)

    def arrivals(self, now: float) -> ArrivalCounts:
        dropped = self.dropped(now)  # settled first: it sets first_dropped_ts
        return ArrivalCounts(self.issued, dropped, self.first_dropped_ts)


class SweepPacing(OpenModelPacing):
    """A sweep: back to back in its closed passes (synchronous, throughput), arrivals in its rate
    passes, nothing in its baseline or once it is over."""

    shares_arrivals = False  # one process only: its rates are measured as it goes

    def __init__(self, plan: SweepPlan):
        super().__init__(plan)
        self.plan = plan

    def take(self, now: float) -> Ticket | None:
        current = self.plan.pass_at(now)
        if current is None:
            return None
        return Ticket() if current.kind in CLOSED_PASSES else arrival_ticket(self.plan.claim(now))

    def on_row(self, file_name: str, row: dict) -> None:
        """A recorder listener: request rows measure the closed passes' rates."""
        if file_name == schema.REQUESTS_CSV:
            self.plan.observe_request(row)

    def row_listeners(self) -> list[Callable[[str, dict], None]]:
        return [self.on_row]

    def record_end(self, meta: dict, now: float) -> None:
        meta["sweep"] = self.plan.boundaries()


class RoundsPacing(Pacing):
    spaces_work = True
    task_agents_only = True

    def __init__(self, plan: RoundsPlan):
        self.plan = plan

    def take(self, now: float) -> Ticket | None:
        round_no = self.plan.claim(now)
        return None if round_no is None else Ticket(round=round_no)

    def finished(self, ticket: Ticket, now: float) -> None:
        if ticket.round is not None:  # always set on a rounds ticket (take above)
            self.plan.task_finished(ticket.round, now)

    def rounds_plan(self) -> RoundsPlan:
        return self.plan

    def record_end(self, meta: dict, now: float) -> None:
        self.plan.stop(now)
        meta["profile"]["rounds"] = self.plan.boundaries()


class FitPacing(Pacing):
    """A fit: a closed model (each agent does its own work, at its own pace) whose steps are judged on the
    rows: request rows from the recorder, sampler rows from the live judge."""

    def __init__(self, plan: FitPlan):
        self.plan = plan

    def row_listeners(self) -> list[Callable[[str, dict], None]]:
        return [self.plan.on_row]

    def record_end(self, meta: dict, now: float) -> None:
        self.plan.stop(now)
        meta["fit"] = self.plan.record()


def pacing_for(schedule: Pacer | RoundsPlan | SweepPlan | FitPlan | None) -> Pacing:
    """The pacing for what a profile's paced_by() returned: arrivals, a sweep, rounds, a fit's steps, or
    none (closed model)."""
    if isinstance(schedule, Pacer):
        return OpenModelPacing(schedule)
    if isinstance(schedule, SweepPlan):
        return SweepPacing(schedule)
    if isinstance(schedule, RoundsPlan):
        return RoundsPacing(schedule)
    if isinstance(schedule, FitPlan):
        return FitPacing(schedule)
    return Pacing()
