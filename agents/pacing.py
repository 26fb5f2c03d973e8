"""Who may start work when, under an open model (arrival rate), a sweep or rounds: tickets agents take.

Closed-model runs have no pacing: agents loop with their own wait time. Under `--arrival-rate` an agent
takes the next scheduled arrival (dropped when no agent was free in time, k6's dropped_iterations);
a sweep's closed passes let agents go back to back, its rate passes pace arrivals; under rounds an agent
takes a slot in the current round and reports the task finished. In a distributed run the master sends
each worker its share of the arrivals (a Locust message) and the workers report what they issued and
dropped (report_to_master); under rounds the master keeps the round clock, grants each
worker as many of a round's tasks as it runs agents, and the workers report every task taken and
finished at once (Locust messages both ways).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from contract import schema
from scenarios.arrivals import Arrival, Pacer
from scenarios.open_model import pacer_from_doc
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
            dropped = pacing.dropped(time.time())
            data[ARRIVALS_KEY] = {
                "issued": pacing.issued,
                "dropped": dropped,
                "first": pacing.first_dropped_ts,
            }

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

    @property
    def first_dropped_ts(self) -> float | None:
        return min((w["first"] for w in self._by_worker.values() if w.get("first") is not None), default=None)


def arrival_counts(pacing: OpenModelPacing | FleetArrivals, now: float) -> dict:
    """run.json "open_model": arrivals issued and dropped, and when the first dropped one was due."""
    return {
        "issued_arrivals": pacing.issued,
        "dropped_arrivals": pacing.dropped(now),
        "first_dropped_ts": pacing.first_dropped_ts,
    }


ROUND_GRANT_MESSAGE = "kit_round_grant"  # master -> worker: {"round": r, "tasks": k}; round 0 resets
ROUND_TASK_MESSAGE = "kit_round_task"  # worker -> master: {"round": r, "event": "submitted" | "finished"}


class WorkerRounds:
    """On a worker: the tasks of a round the master granted it; each task taken and finished is sent to
    the master at once, which counts them and closes the round."""

    def __init__(self, send: Callable[[dict], None]) -> None:
        self._send = send
        self.round = 0
        self.left = 0

    def grant(self, round_no: int, tasks: int) -> None:
        """A new grant replaces what is left of an older one (a round closed by --round-hold)."""
        self.round, self.left = round_no, tasks

    def take(self, now: float) -> Ticket | None:
        if self.left <= 0:
            return None
        self.left -= 1
        self._send({"round": self.round, "event": "submitted"})
        return Ticket(round=self.round)

    def finished(self, ticket: Ticket, now: float) -> None:
        self._send({"round": ticket.round, "event": "finished"})

    def dropped(self, now: float) -> int:
        return 0


Pacing = OpenModelPacing | RoundsPacing | WorkerRounds  # what an agent's task is gated by


def expect_round_grants(environment, fresh: bool = False) -> WorkerRounds:
    """On a worker of a rounds run: its agents take only the tasks the master grants (none until then,
    also on a worker that joins mid-run); `fresh` drops what an earlier run granted."""
    pacing = pacing_of(environment)
    if fresh or not isinstance(pacing, WorkerRounds):
        runner = environment.runner
        pacing = WorkerRounds(lambda data: runner.send_message(ROUND_TASK_MESSAGE, data))
        set_pacing(environment, pacing)
    return pacing


def follow_master_rounds(environment) -> None:
    """On a worker: run the round tasks the master grants, reporting each one taken and finished."""

    def on_grant(msg, **_kwargs) -> None:
        pacing = expect_round_grants(environment, fresh=msg.data["round"] == 0)
        pacing.grant(int(msg.data["round"]), int(msg.data["tasks"]))

    environment.runner.register_message(ROUND_GRANT_MESSAGE, on_grant)


class FleetRounds(RoundsPacing):
    """On the master: the round clock. A round's tasks are granted once its agents are spawned, to each
    worker as many as it runs; the round closes when the workers have reported all of them finished."""

    def __init__(self, plan: RoundsPlan) -> None:
        super().__init__(plan)
        self.granted = 0  # the last round granted

    def due_grants(self, agents_by_worker: dict[str, int] | None) -> dict[str, int]:
        """{worker: tasks} for the current round once the workers run its agents (None: still
        spawning), else {}; a round is granted once."""
        cur = self.plan.current
        if cur is None or cur.round <= self.granted or agents_by_worker is None:
            return {}
        if sum(agents_by_worker.values()) != cur.concurrency:
            return {}
        self.granted = cur.round
        return {worker: n for worker, n in agents_by_worker.items() if n > 0}

    def grant_doc(self, tasks: int) -> dict:
        return {"round": self.granted, "tasks": tasks}

    def on_task(self, data: dict, now: float) -> None:
        """A worker's report of one task of a round: taken (submitted) or finished."""
        round_no = int(data.get("round") or 0)
        if not 0 < round_no <= len(self.plan.rounds):
            return
        if data.get("event") == "submitted":
            self.plan.note_submitted(round_no)
        else:
            self.plan.task_finished(round_no, now)


def lead_rounds(environment) -> None:
    """On the master: route the workers' task reports to the run's round clock (when it has one)."""

    def on_task(msg, **_kwargs) -> None:
        pacing = pacing_of(environment)
        if isinstance(pacing, FleetRounds):
            pacing.on_task(msg.data, time.time())

    environment.runner.register_message(ROUND_TASK_MESSAGE, on_task)
