"""The fleet protocol of a distributed run, both sides: the master shares the open model's arrivals
(each worker paces every n-th of one sequence), keeps the round clock and grants each worker a round's
tasks, drains the workers' agents at the end (or stops them at once); the workers report their arrivals,
their round tasks and their own CPU. Locust messages and reports only; it judges nothing.

Locust's own `stop` message blocks a worker's message loop for the stop-timeout (twice: the stop, then
a sleep), so a later message could not cut it short. The kit's stop is handled in a greenlet of its own
(`register_message(..., concurrent=True)`), so a stop at once can overtake a graceful one.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import gevent
import psutil
from locust.env import Environment
from locust.runners import STATE_RUNNING, MasterRunner

from agents.run_context import context_of
from scenarios.arrivals import Pacer
from scenarios.fit import FitPlan
from scenarios.open_model import pacer_from_doc
from scenarios.pacing import (
    ArrivalCounts,
    OpenModelPacing,
    Pacing,
    RoundGrants,
    RoundsPacing,
    Ticket,
    pacing_for,
)
from scenarios.profile import Profile
from scenarios.rounds import RoundsPlan
from scenarios.sweep import SweepPlan

SHARE_MESSAGE = "kit_open_model_share"  # master -> worker: its share of the arrivals (Profile.share_doc)
ARRIVALS_KEY = "kit_arrivals"  # worker -> master, in each report: {"issued", "dropped", "first"}
CPU_KEY = "kit_loadgen_cpu_pct"  # worker -> master, in each report: its own CPU % since the last one
PID_KEY = "kit_loadgen_pid"  # worker -> master, in each report: its process id (names it in the verdict)
ROUND_GRANT_MESSAGE = "kit_round_grant"  # master -> worker: {"round": r, "tasks": k}; round 0 resets
ROUND_TASK_MESSAGE = "kit_round_task"  # worker -> master: {"round": r, "event": submitted | finished}
ROUND_TASK_SUBMITTED, ROUND_TASK_FINISHED = "submitted", "finished"
STOP_MESSAGE = "loadkit_stop_agents"  # master -> worker: {"now": bool}
POLL_S = 0.5


# ---- the worker's side ---------------------------------------------------------------------------------
def follow_master(environment: Environment) -> None:
    """On a worker: pace the share of arrivals and the round tasks the master sends, stop the agents when
    it says so, and add this process's arrivals and CPU to every report to the master."""
    runner = environment.runner
    assert runner is not None
    own = psutil.Process()
    own.cpu_percent(None)  # the first call only sets the reference point

    def on_share(msg, **_kwargs) -> None:
        context_of(environment).pacing = OpenModelPacing(pacer_from_doc(msg.data))

    def on_grant(msg, **_kwargs) -> None:
        pacing = expect_round_grants(environment, fresh=msg.data["round"] == 0)
        pacing.grant(int(msg.data["round"]), int(msg.data["tasks"]))

    def report(client_id, data) -> None:
        data[CPU_KEY], data[PID_KEY] = own.cpu_percent(None), own.pid
        pacing = context_of(environment).pacing
        if pacing is not None and (arrivals := pacing.arrivals(time.time())) is not None:
            data[ARRIVALS_KEY] = {
                "issued": arrivals.issued,
                "dropped": arrivals.dropped,
                "first": arrivals.first_dropped_ts,
            }

    runner.register_message(SHARE_MESSAGE, on_share)
    runner.register_message(ROUND_GRANT_MESSAGE, on_grant)
    environment.events.report_to_master.add_listener(report)
    follow_master_stop(environment)


def follow_master_stop(environment: Environment) -> None:
    """On a worker: stop the agents when the master says so, gracefully or at once; after Locust's own
    stop, report ready at once."""

    def stopped(**_kwargs) -> None:
        """Locust's own stop: its agents are gone now. It sleeps the stop-timeout next before it reports
        ready, deaf meanwhile to the master's quit (the worker then lingers a minute, waiting for a
        heartbeat): that sleep need not be. The next spawn message sets the stop-timeout again."""
        environment.stop_timeout = 0

    assert environment.runner is not None
    environment.runner.register_message(
        STOP_MESSAGE, lambda msg, **_kw: _stop_agents(environment, msg.data), concurrent=True
    )
    environment.events.test_stop.add_listener(stopped)


def _stop_agents(environment: Environment, data: dict) -> None:
    """The master's stop: gracefully (their --stop-timeout) or at once."""
    runner = environment.runner
    assert runner is not None
    if data.get("now"):
        environment.stop_timeout = 0
        runner.user_greenlets.kill(block=False)
        return
    if runner.spawning_greenlet is not None:
        runner.spawning_greenlet.kill(block=True)
    runner.stop_users(dict(runner.user_classes_count))
    runner.user_greenlets.join(timeout=environment.stop_timeout or 0)  # and those a ramp-down killed
    environment.stop_timeout = 0  # no agent is left: Locust's own stop that follows need not wait


class WorkerRounds(Pacing):
    """On a worker: the tasks of a round the master granted it; each task taken and finished is sent to
    the master at once, which counts them and closes the round."""

    spaces_work = True

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
        self._send({"round": self.round, "event": ROUND_TASK_SUBMITTED})
        return Ticket(round=self.round)

    def finished(self, ticket: Ticket, now: float) -> None:
        self._send({"round": ticket.round, "event": ROUND_TASK_FINISHED})

    def round_grants(self) -> WorkerRounds:
        return self


def expect_round_grants(environment: Environment, fresh: bool = False) -> RoundGrants:
    """On a worker of a rounds run: its agents take only the tasks the master grants (none until then,
    also on a worker that joins mid-run); `fresh` drops what an earlier run granted."""
    pacing = context_of(environment).pacing
    if not fresh and pacing is not None and (grants := pacing.round_grants()) is not None:
        return grants
    runner = environment.runner
    assert runner is not None
    rounds = WorkerRounds(lambda data: runner.send_message(ROUND_TASK_MESSAGE, data))
    context_of(environment).pacing = rounds
    return rounds


# ---- the master's side ---------------------------------------------------------------------------------
class FleetArrivals(Pacing):
    """On the master: the open model's arrivals as the workers last reported them, summed. Its agents
    run on the workers: it hands out no tickets (the closed model's answer)."""

    def __init__(self) -> None:
        self._by_worker: dict[str, dict] = {}

    def note_report(self, client_id, data: dict) -> None:
        if isinstance(data.get(ARRIVALS_KEY), dict):
            self._by_worker[str(client_id)] = data[ARRIVALS_KEY]

    def dropped(self, now: float) -> int:
        return sum(int(w["dropped"]) for w in self._by_worker.values())

    def arrivals(self, now: float) -> ArrivalCounts:
        reports = self._by_worker.values()
        first = min((w["first"] for w in reports if w.get("first") is not None), default=None)
        return ArrivalCounts(sum(int(w["issued"]) for w in reports), self.dropped(now), first)


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
        if data.get("event") == ROUND_TASK_SUBMITTED:
            self.plan.note_submitted(round_no)
        else:
            self.plan.task_finished(round_no, now)


class Fleet:
    """On the master: its side of the protocol, for the whole process (each run's pacing is set anew)."""

    def __init__(self, environment: Environment, runner: MasterRunner) -> None:
        self.environment, self.runner = environment, runner
        self.arrivals: FleetArrivals | None = None  # the current run's, under an open model
        self.rounds: FleetRounds | None = None  # the current run's round clock, under rounds
        self.on_cpu: Callable[[str, float], None] = lambda worker, cpu: None
        runner.register_message(ROUND_TASK_MESSAGE, self._on_task)
        environment.events.worker_report.add_listener(self._on_report)

    def start_run(
        self,
        profile: Profile,
        schedule: Pacer | RoundsPlan | SweepPlan | FitPlan | None,  # a fit runs in one process only
        start_ts: float,
        on_cpu: Callable[[str, float], None],
    ) -> Pacing:
        """A run's load starts: what paces it across the workers, and who hears their CPU. Arrivals: each
        worker paces its share from start_ts and reports what it issued; rounds: the round clock lives
        here, every worker starting with no round tasks."""
        self.on_cpu, self.arrivals, self.rounds = on_cpu, None, None
        workers = self._workers()
        pacing = pacing_for(schedule)
        if pacing.shares_arrivals:
            for n, worker in enumerate(workers):
                share = profile.share_doc(n, len(workers), start_ts)
                self.runner.send_message(SHARE_MESSAGE, share, client_id=worker.id)
            self.arrivals = FleetArrivals()
            return self.arrivals
        if (plan := pacing.rounds_plan()) is not None:
            pacing = self.rounds = FleetRounds(plan)
        context_of(self.environment).pacing = pacing
        for worker in workers if self.rounds is not None else []:
            self.runner.send_message(ROUND_GRANT_MESSAGE, {"round": 0, "tasks": 0}, client_id=worker.id)
        return pacing

    def _workers(self) -> list:
        clients = self.runner.clients
        return clients.ready + clients.spawning + clients.running

    def grant_round(self) -> None:
        """Each tick of a rounds run: once a round's agents are spawned, grant each worker as many of its
        tasks as it runs agents (Locust's own spread of the users)."""
        if self.rounds is None:
            return
        workers = self._workers()
        agents = {w.id: w.user_count for w in workers} if self.runner.state == STATE_RUNNING else None
        for worker, tasks in self.rounds.due_grants(agents).items():
            self.runner.send_message(ROUND_GRANT_MESSAGE, self.rounds.grant_doc(tasks), client_id=worker)

    def drain(self, timeout_s: float, report_s: float) -> None:
        """At a run's end: stop the workers' agents gracefully and wait until they report none left, then
        for the report that follows, which carries their last rows and arrival counts (a headless master
        would otherwise quit before it arrives: Locust sends `quit` without a `stop`)."""
        if not self.runner.clients.all:
            return
        stop_workers(self.runner, now=False)
        deadline = time.monotonic() + timeout_s
        while self.runner.user_count and time.monotonic() < deadline:
            gevent.sleep(POLL_S)
        self.runner.stop()
        gevent.sleep(report_s)

    def _on_task(self, msg, **_kwargs) -> None:
        if self.rounds is not None:
            self.rounds.on_task(msg.data, time.time())

    def _on_report(self, client_id, data: dict) -> None:
        if self.arrivals is not None:
            self.arrivals.note_report(client_id, data)
        if isinstance(data.get(CPU_KEY), (int, float)):
            self.on_cpu(self._name(str(client_id), data.get(PID_KEY)), float(data[CPU_KEY]))

    def _name(self, client_id: str, pid: object) -> str:
        """A worker as the validity verdict names it: Locust's index of it and its process id."""
        index = self.runner.worker_indexes.get(client_id)
        return f"worker {client_id if index is None else index}" + (f" (pid {pid})" if pid else "")


def stop_workers(runner, now: bool) -> None:
    """On a master: tell every worker to stop its agents (`now`: kill them, their on_stop still runs)."""
    if isinstance(runner, MasterRunner) and runner.clients.all:
        runner.send_message(STOP_MESSAGE, {"now": now})
