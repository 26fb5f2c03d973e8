"""Signals during start-up: from the locustfile's first line, before anything is started, SIGINT, SIGTERM
and SIGHUP are remembered instead of ending the process by their default action. Start-up looks before
each thing it starts (`startup_signal`); stopped there, it leaves run.json saying so (kit/runs.py). Once
the run exists, kit/signals.py installs the run's handlers and hands it what came before (`take`). A
Locust worker, forked after that line, gets the handlers it had before (`restore_defaults`).

Imports nothing but the standard library: it is installed before Locust's and the kit's modules load.
"""

from __future__ import annotations

import os
import signal
import sys
import time

HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_received: list[tuple[int, float]] = []  # (signal, time) received before the run's handlers
_before: dict[int, object] = {}  # the handlers install replaced


def install() -> None:
    """Remember SIGINT/SIGTERM/SIGHUP instead of dying of them, until the run's handlers are installed.
    Not in a process started as a worker: it keeps no record, and the parent of `--worker --processes N`
    never starts a run (it only waits for its children) to hand the signals to."""
    if "--worker" in sys.argv or os.environ.get("LOCUST_MODE_WORKER", "").lower() in ("1", "true"):
        return
    for sig in HANDLED:
        previous = signal.signal(sig, _remember)
        if previous is not _remember:
            _before[sig] = previous


def _remember(signum: int, _frame: object) -> None:
    _received.append((signum, time.time()))


def startup_signal() -> int | None:
    """The first signal received during start-up, or None."""
    return _received[0][0] if _received else None


def startup_interrupt() -> dict:
    """run.json's `interrupt` for the signals received during start-up."""
    names = [signal.Signals(sig).name for sig, _ in _received]
    return {"signals": names, "first_ts": _received[0][1] if _received else None, "forced": len(names) > 1}


def restore_defaults() -> None:
    """A worker's handlers as Python and Locust expect them (SIGINT raises KeyboardInterrupt)."""
    for sig, previous in _before.items():
        signal.signal(sig, previous)  # type: ignore[arg-type]


def take() -> list[int]:
    """The signals received so far, in order; from now on the run's handlers have them."""
    taken = [sig for sig, _ in _received]
    _received.clear()
    return taken
