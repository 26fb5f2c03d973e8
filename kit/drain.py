"""On a Locust master at a profile's end: stop the workers' agents, then wait for each worker's next
report, which carries its last rows and counts. It only waits; it writes and judges nothing.

A worker's `client_stopped` message removes it from the master's clients (Locust's runners.py), so once
`runner.stop()` returns every worker has stopped its agents; a report received after that was composed
after the stop (one ordered connection per worker) and holds the rows of the agents it stopped.
"""

from __future__ import annotations

import time
import weakref

import gevent
from locust.runners import STATE_MISSING, MasterRunner

REPORT_DEADLINE_S = (
    10.0  # workers report every 3 s (Locust's WORKER_REPORT_INTERVAL); a loaded host is slower
)
_REPORTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class WorkerReports:
    """When the master last heard each worker's report (its own clock)."""

    def __init__(self, environment) -> None:
        self.last: dict[str, float] = {}
        environment.events.worker_report.add_listener(self._take)

    def _take(self, client_id, data) -> None:
        self.last[str(client_id)] = time.time()

    def waiting_for(self, workers: list[str], since: float) -> list[str]:
        return [w for w in workers if self.last.get(w, 0.0) <= since]


def watch_reports(environment) -> None:
    """Call once on a master, at init."""
    _REPORTS[environment] = WorkerReports(environment)


def drain(environment, runner: MasterRunner, deadline_s: float = REPORT_DEADLINE_S) -> list[str]:
    """Stop the workers' agents and wait for a report from each after the stop; the workers not heard
    from by the deadline (lost, or too slow) are returned."""
    workers = [w.id for w in runner.clients.all if w.state != STATE_MISSING]
    runner.stop()
    since, reports = time.time(), _REPORTS[environment]
    end = time.monotonic() + deadline_s
    while (late := reports.waiting_for(workers, since)) and time.monotonic() < end:
        gevent.sleep(0.1)
    return late
