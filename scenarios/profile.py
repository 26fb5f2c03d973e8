"""The one interface every load profile satisfies: the shape's ticks, its phases, what paces work, and
what the run must know of it (scenarios/traits.py gives the common answers).

A Protocol (and how its parameters read as a dict); the run (kit/) drives any profile through it
without asking what kind it is.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol

from scenarios.arrivals import Pacer
from scenarios.fit import FitPlan
from scenarios.rounds import RoundsPlan
from scenarios.shape import Phase, Tick
from scenarios.sweep import SweepPlan


class Profile(Protocol):
    """A load profile: which user count Locust should aim at, second by second."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> Any:
        """A dataclass; dataclasses.asdict(params) goes to run.json."""
        ...

    @property
    def driver(self) -> str | None:
        """ "module:Class" of a user that runs the whole protocol itself, or None."""
        ...

    def tick(self, t: float) -> Tick | None:
        """The target at elapsed time t (seconds); None ends the run."""
        ...

    def phases(self) -> list[Phase]:
        """The phases known so far (all of them for a timed profile)."""
        ...

    def peak_users(self) -> int:
        """The most users it ever asks one load generator for: registry.build_profile refuses a profile
        above scenarios.options.MAX_USERS, so every profile is capped by this one check."""
        ...

    def paced_by(self, start_ts: float) -> Pacer | RoundsPlan | SweepPlan | FitPlan | None:
        """What paces the agents' work from start_ts: arrivals (open model), rounds, a sweep's passes,
        a fit's steps, or nothing."""
        ...

    # What the run asks beyond the shape (defaults and meanings: scenarios/traits.py ProfileTraits).
    one_process: bool
    errors_are_its_measure: bool
    runs_in_rounds: bool
    spawns_pool_first: bool
    judges_trends: bool
    records_stop_point: bool
    memory_budget_bytes: float | None
    end_s: float

    def arrivals_asked(self, start_ts: float) -> dict | None: ...

    def share_doc(self, share: int, shares: int, start_ts: float) -> dict: ...

    def edit_note(self) -> str: ...

    def edit(self, users: int, spawn_rate: float, t: float) -> str | None: ...


def params_of(profile: Profile) -> dict[str, Any]:
    """The profile's parameters as run.json records them (a dataclass, or a mapping)."""
    params = profile.params
    if dataclasses.is_dataclass(params) and not isinstance(params, type):
        return dataclasses.asdict(params)
    return dict(params or {})
