"""How a run is asked to end: the first reason asked wins (its exit code, whether it was the profile's
own end), at the profile's next tick or at once; from the start of its ending the run is closing.

Holds the request only: the watchers, signals, drivers and the profile ask; the run acts on it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import gevent
from locust.env import Environment

from contract import exit_codes
from contract.redact import redact

log = logging.getLogger("loadkit")
PROFILE_COMPLETE = "profile complete"


@dataclass
class StopRequest:
    reason: str
    exit_code: int | None  # None: let Locust decide (0, or 1 on request errors)
    planned: bool = False  # the profile's own end (it ran out, or its driver ended it): not "early"


class Stopping:
    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.request: StopRequest | None = None
        self.closing = False  # the run's ending has begun: a stopped sampler or target is expected now

    def ask(self, reason: str, exit_code: int | None, now: bool = False, planned: bool = False) -> None:
        """End the run: the profile stops at its next tick, or at once when `now`."""
        if self.request is None:
            self.request = StopRequest(redact(reason), exit_code, planned)  # in run.json and the web UI
            log.warning("loadkit: stopping: %s", reason)
        elif now and redact(reason) != self.request.reason:
            # the first reason stays the run's; the log says why in-flight work is cut short
            log.warning("loadkit: %s: stopping every agent now", redact(reason))
        if now and self.environment.runner is not None:
            self.environment.stop_timeout = 0  # nothing left to finish against: stop without grace
            gevent.spawn(self.environment.runner.quit)

    def ran_out(self) -> None:
        """The profile's own end."""
        if self.request is None:
            self.request = StopRequest(PROFILE_COMPLETE, None, planned=True)

    def overrule(self, reason: str, exit_code: int) -> None:
        """While the record is written: a failure after the load (a full disk, a load not delivered)
        becomes the run's ending, unless its stop has a code of its own."""
        if self.request is None or self.request.exit_code is None:
            planned = self.request is not None and self.request.planned  # the load ran; its record fell short
            self.request = StopRequest(reason, exit_code, planned)

    @property
    def target_died(self) -> bool:
        return self.request is not None and self.request.exit_code == exit_codes.TARGET_DIED

    def ending(self, default_reason: str) -> StopRequest:
        """The stop as recorded: the one asked, else the default (the profile's end is planned)."""
        return self.request or StopRequest(default_reason, None, planned=default_reason == PROFILE_COMPLETE)
