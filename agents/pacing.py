"""Who may start work when, under an open model (arrival rate) or rounds: tickets agents take.

Closed-model runs have no pacing: agents loop with their own wait time. Under `--arrival-rate` an agent
takes the next scheduled arrival (dropped when no agent was free in time, k6's dropped_iterations);
under rounds it takes a slot in the current round and reports the task finished. In a distributed run
the master sends each worker its share of the arrivals (a Locust message) and the workers report what
they issued and dropped (report_to_master); rounds stay single-process.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass

from scenarios.arrivals import Pacer, pacer_from_doc
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

    @property
    def issued(self) -> int:
        return self.pacer.issued

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


SHARE_MESSAGE = "kit_open_model_share"
ARRIVALS_KEY = "kit_arrivals"


def follow_master_share(environment) -> None:
    """On a worker: pace the share of the open model the master sends; report its issued and dropped
    arrivals (cumulative) in every report to the master, the last one included."""

    def on_share(msg, **_kwargs) -> None:
        set_pacing(environment, OpenModelPacing(pacer_from_doc(msg.data)))

    def report(client_id, data) -> None:
        pacing = pacing_of(environment)
        if isinstance(pacing, OpenModelPacing):
            data[ARRIVALS_KEY] = {"issued": pacing.issued, "dropped": pacing.dropped(time.time())}

    environment.runner.register_message(SHARE_MESSAGE, on_share)
    environment.events.report_to_master.add_listener(report)


class FleetArrivals:
    """On the master: the open model's arrivals as the workers last reported them, summed."""

    def __init__(self, environment) -> None:
        self._by_worker: dict[str, dict] = {}
        environment.events.worker_report.add_listener(self._take)

    def _take(self, client_id, data) -> None:
        if isinstance(data.get(ARRIVALS_KEY), dict):
            self._by_worker[str(client_id)] = data[ARRIVALS_KEY]

    @property
    def issued(self) -> int:
        return sum(int(w["issued"]) for w in self._by_worker.values())

    def dropped(self, now: float) -> int:
        return sum(int(w["dropped"]) for w in self._by_worker.values())
