"""How a run is asked to end: the first reason wins, and a later stop at once (a target found dead after
a Ctrl-C) still says in the log why the in-flight work it cuts short was cut."""

from __future__ import annotations

import logging
import signal

from locust.env import Environment

from contract import exit_codes
from kit.stopping import Stopping


def test_the_first_reason_wins_and_a_later_stop_at_once_says_why_it_cut_the_work_short(caplog):
    stopping = Stopping(Environment())
    with caplog.at_level(logging.WARNING, logger="loadkit"):
        stopping.ask("interrupted by SIGTERM", exit_codes.INTERRUPTED[signal.SIGTERM])
        stopping.ask("target died mid-run: pid 7 is gone", exit_codes.TARGET_DIED, now=True)
        stopping.ask("interrupted by SIGTERM", exit_codes.INTERRUPTED[signal.SIGTERM], now=True)  # said
        stopping.ask("threshold failed", exit_codes.THRESHOLD_FAILED)
    assert stopping.request is not None and stopping.request.reason == "interrupted by SIGTERM"
    assert stopping.request.exit_code == exit_codes.INTERRUPTED[signal.SIGTERM]
    assert [r.getMessage() for r in caplog.records] == [
        "loadkit: stopping: interrupted by SIGTERM",
        "loadkit: target died mid-run: pid 7 is gone: stopping every agent now",
    ]
