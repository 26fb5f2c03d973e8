"""What one run hands its agents, in one object: the settings, the calibration learnt from the gateway's
usage, the pacing, the link back to the run, the row recorder.

The run makes it in one place (kit/runs.py `begin_run`, anew for each run of the web UI, so nothing of one
run leaks into the next; a worker at its init) and sets it as the Locust environment's one kit attribute,
where agents find it through their own `self.environment`. An environment the kit did not set up (a bare
test, an agent used on its own) gets one with the defaults on first read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from agents.calibration import Calibration
from agents.run_link import RunLink
from agents.settings import DEFAULTS, AgentSettings
from contract.records import AgentRecord, RequestRecord, TaskRecord
from scenarios.pacing import Pacing

ATTRIBUTE = "loadkit_context"  # the one attribute the kit sets on a Locust environment


class RowSink(Protocol):
    """Where the run's rows go (kit/rows.py's RowRecorder, which registers itself here)."""

    def record(self, record: RequestRecord | TaskRecord | AgentRecord) -> None: ...


@dataclass
class RunContext:
    settings: AgentSettings = DEFAULTS
    calibration: Calibration = field(default_factory=Calibration)
    pacing: Pacing | None = None  # set when the load starts (kit/load.py; a worker: from its master)
    link: RunLink | None = None  # set by the run (kit/runs.py); None for agents used on their own
    recorder: RowSink | None = None  # set by the RowRecorder made for the run; None: rows go nowhere
    spec_matched: bool | None = None  # a spec's [create] id path: unknown until a first reply says
    run: Any = None  # the run that owns this context (kit/runtime.py's KitRun), opaque to agents

    def record(self, row: RequestRecord | TaskRecord | AgentRecord) -> None:
        """A row to the run directory; nowhere when the kit is not wired (agents used on their own)."""
        if self.recorder is not None:
            self.recorder.record(row)

    def spaces_work(self) -> bool:
        """Whether agents' work is spaced by a pacing, not by their own wait time."""
        return self.pacing is not None and self.pacing.spaces_work


def context_of(environment: Any) -> RunContext:
    """The environment's current run context (the defaults' when the kit has not set one)."""
    found = getattr(environment, ATTRIBUTE, None)
    if found is None:
        found = new_context(environment, DEFAULTS)
    return found


def new_context(environment: Any, settings: AgentSettings) -> RunContext:
    """A fresh context for a run with these settings, replacing the environment's last."""
    context = RunContext(settings)
    setattr(environment, ATTRIBUTE, context)
    return context
