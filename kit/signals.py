"""SIGINT, SIGTERM and SIGHUP during a headless run: the first stops the load as a profile's end does
(in-flight work gets --stop-timeout), a second stops every agent at once; run.json names the signals.

Installed with gevent's signal API at init (Locust 2.47 installs its own SIGTERM handler only after the
shape has finished). It never exits the process: Locust's shutdown runs the hooks that write the record.
"""

from __future__ import annotations

import logging
import signal
import time

import gevent

from contract import exit_codes

log = logging.getLogger("loadkit")
HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def install(run) -> None:
    """Route the three signals to `interrupt(run, ...)` for the rest of the process's life."""
    for sig in HANDLED:
        gevent.signal_handler(sig, interrupt, run, sig)


def interrupt(run, sig: int) -> None:
    """First signal: a graceful stop with the signal's exit code. Second: kill every agent now (their
    on_stop still closes what they opened and in-flight rows are recorded as interrupted)."""
    name = signal.Signals(sig).name
    record = run.meta.setdefault("interrupt", {"signals": [], "first_ts": time.time(), "forced": False})
    record["signals"].append(name)
    if run.closing:  # the load is over and the record is being written: nothing left to stop
        log.warning("loadkit: %s while writing the run's record: finishing it", name)
        return
    if len(record["signals"]) == 1:
        run.request_stop(f"interrupted by {name}", exit_codes.INTERRUPTED[signal.Signals(sig)])
        log.warning("loadkit: %s: stopping; in-flight work has --stop-timeout; again to stop at once", name)
        return
    record["forced"] = True
    if run.stop is not None:
        run.stop.reason += f"; {name} again: stopped at once"
    log.warning("loadkit: %s again: stopping every agent now", name)
    run.environment.stop_timeout = 0
    runner = run.environment.runner
    if runner is not None:
        runner.user_greenlets.kill(block=False)
