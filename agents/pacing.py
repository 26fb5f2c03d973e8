"""Who may start work when, under an open model (arrival rate) or rounds: tickets agents take.

Closed-model runs have no pacing: agents loop with their own wait time. Under `--arrival-rate` an agent
takes the next scheduled arrival (dropped when no agent was free in time, k6's dropped_iterations);
under rounds it takes a slot in the current round and reports the task finished. Single-process runs
only: the schedule lives beside the shape, on the master.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from scenarios.arrivals import Pacer
from scenarios.rounds import RoundsPlan

_PACING: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Ticket:
    """Permission for one unit of work: start no earlier than start_ts; tag it with round."""

    start_ts: float | None = None
    round: int | None = None


class OpenModelPacing:
    def __init__(self, pacer: Pacer):
        self.pacer = pacer

    def take(self, now: float) -> Ticket | None:
        start = self.pacer.claim(now)
        return None if start is None else Ticket(start_ts=start)

    def finished(self, ticket: Ticket, now: float) -> None:
        """Arrivals need no acknowledgement: their count is the schedule's."""

    def dropped(self, now: float) -> int:
        return self.pacer.settle(now)


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


def set_pacing(environment, pacing: OpenModelPacing | RoundsPacing | None) -> None:
    if pacing is None:
        _PACING.pop(environment, None)
    else:
        _PACING[environment] = pacing


def pacing_of(environment) -> OpenModelPacing | RoundsPacing | None:
    return _PACING.get(environment)


def pacing_for(schedule: Pacer | RoundsPlan | None) -> OpenModelPacing | RoundsPacing | None:
    """The pacing for what a profile's paced_by() returned: arrivals, rounds, or none (closed model)."""
    if isinstance(schedule, Pacer):
        return OpenModelPacing(schedule)
    if isinstance(schedule, RoundsPlan):
        return RoundsPacing(schedule)
    return None
