"""Did the run's load happen? The workers a distributed run lost (which, when, with how many agents) and
whether the gateway answered anything at all: what keeps a run from ending "complete" (exit code 7).

Watches Locust's master runner and the rows written, and describes what fell short; stopping the run and
choosing its exit code is the caller's (kit/runtime.py).
"""

from __future__ import annotations

from locust.runners import STATE_MISSING, MasterRunner

from contract import schema
from contract.records import WorkerLoss
from contract.schema import AGENT, MCP_OP, REQUEST, TASK_STATUS
from scenarios.rounds import RoundsPlan

SHORTFALL = "load not delivered"


class FleetWatch:
    """On a master: each poll compares the workers with the last poll's; a worker now missing or gone is
    a loss (its agent count read before Locust clears it). A missing worker that comes back is watched
    again and a second loss counts again. A worker listed when the test began to stop and gone later is
    not a loss: Locust drops each worker from its list when it reports stopped and lists it again when it
    reports ready, and a run often ends between the two."""

    def __init__(self, runner: MasterRunner, start_ts: float) -> None:
        self.runner = runner
        self.start_ts = start_ts
        self.agents: dict[str, int] = {}  # live workers -> agents at the last poll
        self.losses: list[WorkerLoss] = []
        self.told_to_stop: set[str] = set()  # the workers listed when the test began to stop
        runner.environment.events.test_stopping.add_listener(self._stopping)

    def _stopping(self, **_kwargs) -> None:
        self.told_to_stop = {node.id for node in self.runner.clients.all}

    def poll(self, now: float) -> list[WorkerLoss]:
        """The losses since the last poll (also kept in `losses`)."""
        nodes = {node.id: node for node in self.runner.clients.all}
        new = []
        for worker, agents in list(self.agents.items()):
            node = nodes.get(worker)
            if node is not None and node.state != STATE_MISSING:
                continue
            del self.agents[worker]
            if node is None and worker in self.told_to_stop:
                continue
            how = "quit" if node is None else "went missing"
            new.append(
                WorkerLoss(worker, self._index(worker), now, round(now - self.start_ts, 1), agents, how)
            )
        for worker, node in nodes.items():
            if node.state != STATE_MISSING:
                self.agents[worker] = node.user_count
        self.losses += new
        return new

    @property
    def none_left(self) -> bool:
        """Every worker is gone (Locust then stops the test itself)."""
        return bool(self.losses) and not self.agents

    def _index(self, worker: str) -> int | None:
        try:
            return int(self.runner.get_worker_index(worker))
        except (AttributeError, KeyError, TypeError, ValueError):
            return None


class AnsweredRows:
    """Counts the rows that show the gateway was loaded: requests it answered (failed ones too), tasks
    that ended, sessions opened or refused. Requests and tasks the run's own stop cut short do not count.
    A run whose work is MCP tool calls (`tool_calls`) also counts those that succeeded, and keeps the
    first reason one failed or a session did not open: with none succeeded the load was not delivered."""

    def __init__(self, tool_calls: bool = False) -> None:
        self.answered = 0
        self.cut_short = 0
        self.tool_calls = tool_calls
        self.calls_ok = 0
        self.calls_failed = 0
        self.first_failure: str | None = None

    def on_row(self, file_name: str, row: dict) -> None:
        cut = (
            file_name == schema.REQUESTS_CSV and row.get(REQUEST.error_kind) == schema.ERROR_INTERRUPTED
        ) or (file_name == schema.TASKS_CSV and row.get("status") == TASK_STATUS.unfinished)
        if cut:
            self.cut_short += 1
        elif file_name in (schema.REQUESTS_CSV, schema.TASKS_CSV, schema.AGENTS_CSV):
            self.answered += 1
            if self.tool_calls:
                self._tally(file_name, row)

    def _tally(self, file_name: str, row: dict) -> None:
        if file_name == schema.REQUESTS_CSV and row.get(REQUEST.operation) == MCP_OP.tools_call:
            if row.get(REQUEST.ok) in (True, 1, "1"):
                self.calls_ok += 1
                return
            self.calls_failed += 1
        column = REQUEST.error if file_name == schema.REQUESTS_CSV else AGENT.error
        if self.first_failure is None and (error := row.get(column)):
            self.first_failure = str(error)

    def no_tool_call(self) -> str | None:
        """Why the MCP load was not delivered (no tools/call succeeded), or None."""
        if not self.tool_calls or self.calls_ok:
            return None
        why = f"; the first failure: {self.first_failure}" if self.first_failure else ""
        return f"{SHORTFALL}: 0 tools/call succeeded ({self.calls_failed} failed){why}"


def loss_ends_run(loss: WorkerLoss, rounds: RoundsPlan | None, none_left: bool) -> str | None:
    """Why a lost worker ends the run at once, or None (the run goes on with the workers left): a round
    cannot finish without the tasks the worker held, and with no worker left nothing runs."""
    if rounds is not None and not rounds.done:
        due = rounds.current.round if rounds.current else len(rounds.rounds) + 1
        return f"{SHORTFALL}: round {due} cannot finish: {loss.text()} and their tasks"
    if none_left:
        return f"{SHORTFALL}: every worker was lost (the last: {loss.text()})"
    return None


def shortfall(losses: list[WorkerLoss], rows: AnsweredRows, workers_left: bool) -> str | None:
    """Why the load did not happen as asked, as a stop reason; None when it did."""
    if losses:
        lost = "; ".join(loss.text() for loss in losses)
        rest = "the run went on with the workers left" if workers_left else "no worker was left"
        return f"{SHORTFALL}: {lost} ({rest})"
    if rows.answered == 0:
        cut = f"; {rows.cut_short} cut short by the run's stop" if rows.cut_short else ""
        return f"{SHORTFALL}: the gateway answered no request (0 answered{cut})"
    return rows.no_tool_call()
