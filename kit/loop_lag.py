"""The load generator's event-loop lag, measured: a greenlet sleeps a fixed interval and records how much
later than asked it woke, into loop_lag.csv. Every time the kit takes (a request's send, its first token,
its last byte) waits on the same loop, so a loop that wakes late (CPU starved, a greenlet that does not
yield) makes every latency read that much long; the validity rule (analysis/validity.py) reads the file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import gevent

from contract import schema
from contract.csv_append import CsvAppender
from contract.schema import LOOP_LAG, LOOP_LAG_INTERVAL_S

FLUSH_EVERY = 10  # wakes between writes (about a second)


class LoopLag:
    """The probe of one run; `close()` stops it and writes its last rows."""

    def __init__(self, run_dir: Path, guarded: Callable) -> None:
        """`guarded(write)`: the run's disk-guarded write (a full disk is the run's disk error)."""
        self.csv = CsvAppender(run_dir / schema.LOOP_LAG_CSV, schema.LOOP_LAG_COLUMNS)
        self.guarded = guarded
        self.greenlet = gevent.spawn(self._probe)

    def _probe(self) -> None:
        wakes = 0
        while True:
            asked = time.monotonic() + LOOP_LAG_INTERVAL_S
            gevent.sleep(LOOP_LAG_INTERVAL_S)
            lag_ms = max(0.0, time.monotonic() - asked) * 1000
            self.csv.write({LOOP_LAG.ts: round(time.time(), 3), LOOP_LAG.lag_ms: round(lag_ms, 2)})
            wakes += 1
            if wakes % FLUSH_EVERY == 0:
                self.guarded(self.csv.flush)

    def close(self) -> None:
        self.greenlet.kill(block=True)
        self.guarded(self.csv.close)
