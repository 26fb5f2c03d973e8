"""SIGINT, SIGTERM and SIGHUP during a run, headless or in the web UI: the first stops the load as a
profile's end does (in-flight work gets --stop-timeout), a second stops every agent (and worker) at once.

Installed with gevent's signal API at init (Locust 2.47 installs its own SIGTERM handler only after a
headless shape has finished). Headless it never exits the process: Locust's shutdown runs the hooks that
write the record. In the web UI it ends the process once the run is recorded, as --autoquit does
(`web_ui.stop()`); a signal while no run is going just quits. Signals received before these handlers
(from the locustfile's first line: kit/startup_signals.py) go to the run as soon as it exists, in order.
"""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from typing import Protocol

import gevent
from locust.env import Environment
from locust.runners import MasterRunner

from contract import exit_codes
from kit import fleet, startup_signals
from kit.load import Load
from kit.record import RunRecord
from kit.session import Session
from kit.stopping import Stopping

log = logging.getLogger("loadkit")
HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
QUIT_POLL_S = 0.2


class SignalledRun(Protocol):
    """What a signal needs of the run it stops."""

    environment: Environment
    record: RunRecord
    stopping: Stopping
    session: Session
    load: Load | None
    ending: gevent.Greenlet | None


def install(current: Callable[[], SignalledRun | None], quit_ui: Callable[[], None] | None = None) -> None:
    """Route the three signals to `interrupt` for the rest of the process's life. `current()` is the
    run now (the last one in the web UI); `quit_ui` ends a web UI process (None headless). The signals
    received during start-up go to the run now."""
    for sig in HANDLED:
        gevent.signal_handler(sig, interrupt, current, sig, quit_ui)
    for received in startup_signals.take():
        interrupt(current, received, quit_ui)


def interrupt(
    current: Callable[[], SignalledRun | None], sig: int, quit_ui: Callable[[], None] | None = None
) -> None:
    """First signal: a graceful stop with the signal's exit code. Second: kill every agent now (their
    on_stop still closes what they opened and in-flight rows are recorded as interrupted)."""
    run, name = current(), signal.Signals(sig).name
    if quit_ui is not None and idle(run):
        log.warning("loadkit: %s: no run is going: quitting", name)
        gevent.spawn(quit_when_recorded, run, quit_ui)
        return
    assert run is not None  # the handlers are installed once the first run exists
    record = run.record.meta.setdefault(
        "interrupt", {"signals": [], "first_ts": time.time(), "forced": False}
    )
    record["signals"].append(name)
    first = len(record["signals"]) == 1
    if first and quit_ui is not None:
        gevent.spawn(quit_when_recorded, run, quit_ui)
    if run.stopping.closing:  # the load is over and the record is being written: nothing left to stop
        log.warning("loadkit: %s while writing the run's record: finishing it", name)
        return
    if first:
        run.stopping.ask(f"interrupted by {name}", exit_codes.INTERRUPTED[signal.Signals(sig)])
        end_wait_for_workers(run)
        log.warning("loadkit: %s: stopping; in-flight work has --stop-timeout; again to stop at once", name)
        return
    record["forced"] = True
    if run.stopping.request is not None:
        run.stopping.request.reason += f"; {name} again: stopped at once"
    log.warning("loadkit: %s again: stopping every agent now", name)
    run.environment.stop_timeout = 0
    runner = run.environment.runner
    if runner is not None:
        runner.user_greenlets.kill(block=False)
        fleet.stop_workers(runner, now=True)


def end_wait_for_workers(run: SignalledRun) -> None:
    """A headless master still waiting for its --expect-workers (before the load's first tick) sleeps in
    Locust's own loop, deaf to the stop asked: it reads the option anew every second, so none expected
    ends the wait. Locust then starts the shape, whose first tick sees the stop and ends the run with its
    record (no load: none is started)."""
    options = run.environment.parsed_options
    if run.load is None and isinstance(run.environment.runner, MasterRunner) and options is not None:
        options.expect_workers = 0


def idle(run: SignalledRun | None) -> bool:
    """In the web UI: no load has started, or the last run's record is written."""
    return run is None or run.load is None or (run.ending is not None and run.ending.ready())


def quit_when_recorded(run: SignalledRun | None, quit_ui: Callable[[], None]) -> None:
    """Once the run's record is written (at once when idle), end the web UI process, unless Locust is
    quitting already (its own SIGTERM handler runs beside this one: its shutdown comes first)."""
    gevent.sleep(QUIT_POLL_S)
    while not idle(run):
        gevent.sleep(QUIT_POLL_S)
    if run is None or not run.session.quitting:
        quit_ui()
