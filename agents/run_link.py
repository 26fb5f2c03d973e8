"""What a driver agent may know of the run it belongs to, handed in by the run (kit/) at start.

The run puts a RunLink in its context (agents/run_context.py); agents read it there and never import the
run itself (an agent importing the orchestrator would point an arrow up the layers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class RunLink:
    """The target the kit started (if any), a way to end the run with a reason and exit code, and a way
    to see that the run is ending (a driver then stops creating at once)."""

    target_pid: int | None
    target_started_by_kit: bool
    request_stop: Callable[[str, int | None], None]  # (reason, exit code or None for Locust's own)
    stopping: Callable[[], bool] = lambda: False
    target_dead: Callable[[], bool] = lambda: False  # the run found the target dead or frozen
