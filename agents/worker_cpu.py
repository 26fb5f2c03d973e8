"""Each Locust worker's own CPU %, shipped to the master in Locust's `report_to_master` (every ~3 s), so
the saturation check judges every load-generator process, not only the master's.

Measures only its own process; the judging is kit/judge.py's.
"""

from __future__ import annotations

from collections.abc import Callable

import psutil

KEY = "kit_loadgen_cpu_pct"


def report_own_cpu(environment) -> None:
    """On a worker: add this process's CPU % since the previous report to every report."""
    own = psutil.Process()
    own.cpu_percent(None)  # the first call only sets the reference point

    def add(client_id, data) -> None:
        data[KEY] = own.cpu_percent(None)

    environment.events.report_to_master.add_listener(add)


def on_worker_cpu(environment, callback: Callable[[str, float], None]) -> None:
    """On the master: call `callback(worker id, CPU %)` for every worker report that carries one."""

    def take(client_id, data) -> None:
        if isinstance(data.get(KEY), (int, float)):
            callback(str(client_id), float(data[KEY]))

    environment.events.worker_report.add_listener(take)
