"""Who may start work when, under an open model (arrival rate), a sweep or rounds: tickets agents take.

Closed-model runs have no pacing: agents loop with their own wait time. Under `--arrival-rate` an agent
takes the next scheduled arrival (dropped when no agent was free in time, k6's dropped_iterations);
a sweep's closed passes let agents go back to back, its rate passes pace arrivals; under rounds an agent
takes a slot in the current round and reports the task finished. In a distributed run the pacing
comes from the master (kit/fleet.py: each worker's share of the arrivals, the round tasks it granted).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Protocol

from contract import schema
from scenarios.arrivals import Arrival, Pacer
from scenarios.rounds import RoundsPlan
from scenarios.sweep import CLOSED_PASSES, SweepPlan

_PACING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Ticket:
    """Permission for one unit of work: start no earlier than start_ts (an arrival's due time: its
    lateness is measured from it); `arrival` is the arrival's index, `round` the round to tag it with."""

    start_ts: float | None = None
    round: int | None = None
    arrival: int | None = None


class Pacing(Protocol):
    """What an agent's task is gated by: a ticket to take, its end to report, arrivals dropped so far."""

    def take(self, now: float) -> Ticket | None: ...

    def finished(self, ticket: Ticket, now: float) -> None: ...

    def dropped(self, now: float) -> int: ...


def arrival_ticket(arrival: Arrival | None) -> Ticket | None:
    return None if arrival is None else Ticket(start_ts=arrival.due_ts, arrival=arrival.index)


class OpenModelPacing:
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

    def finished(self, ticket: Ticket, now: float) -> None:
        """Arrivals need no acknowledgement: their count is the schedule's."""

    def dropped(self, now: float) -> int:
        return self.pacer.settle(now)


class SweepPacing(OpenModelPacing):
    """A sweep: back to back in its closed passes (synchronous, throughput), arrivals in its rate
    passes, nothing in its baseline or once it is over."""

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


class RoundsPacing:
    def __init__(self, plan: RoundsPlan):
        self.plan = plan

    def take(self, now: float) -> Ticket | None:
        round_no = self.plan.claim(now)
        return None if round_no is None else Ticket(round=round_no)

    def finished(self, ticket: Ticket, now: float) -> None:
        if ticket.round is not None:  # always set on a rounds ticket (take above)
            self.plan.task_finished(ticket.round, now)

    def dropped(self, now: float) -> int:
        return 0


def set_pacing(environment, pacing: Pacing | None) -> None:
    if pacing is None:
        _PACING.pop(environment, None)
    else:
        _PACING[environment] = pacing


def pacing_of(environment) -> Pacing | None:
    return _PACING.get(environment)


def pacing_for(schedule: Pacer | RoundsPlan | SweepPlan | None) -> OpenModelPacing | RoundsPacing | None:
    """The pacing for what a profile's paced_by() returned: arrivals, a sweep, rounds, or none (closed
    model)."""
    if isinstance(schedule, Pacer):
        return OpenModelPacing(schedule)
    if isinstance(schedule, SweepPlan):
        return SweepPacing(schedule)
    if isinstance(schedule, RoundsPlan):
        return RoundsPacing(schedule)
    return None
