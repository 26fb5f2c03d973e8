"""What the run asks a load profile beyond its ticks, with the answer most profiles give: every profile
class inherits ProfileTraits and overrides only where it differs (scenarios/profile.py's Protocol).

Answers only: no clock, no I/O; the run (kit/) acts on them without naming or typing the profile.
"""

from __future__ import annotations

import math

EDIT_APPLIES = "EDIT changes the user count and spawn rate live (a new phase in run.json and users.csv)"


class ProfileTraits:
    """The defaults: a closed-model profile of fixed shape, run anywhere, judged only by thresholds."""

    name: str
    driver: str | None = None  # "module:Class" of a user that runs the whole protocol itself
    one_process = False  # refused on a master or a worker (a serial driver, rates measured as it goes)
    spawns_pool_first = False  # its arrivals wait until the whole agent pool has spawned
    judges_trends = False  # its verdict is the soak trends: a run too short for their data is refused
    records_stop_point = False  # where an aborting threshold stopped it goes to run.json "breakpoint"
    errors_are_its_measure = False  # failed requests are what its verdict judges, not a failed run
    runs_in_rounds = False  # its agents take tasks the master grants round by round (workers wait for them)
    memory_budget_bytes: float | None = None  # the budget it stops at (the cockpit draws it)
    end_s = math.inf  # elapsed seconds it ends at when nothing stops it first (inf: open-ended)

    def arrivals_asked(self, start_ts: float) -> dict | None:
        """run.json "open_model": the arrivals it asks for from start_ts; None for a closed model."""
        return None

    def share_doc(self, share: int, shares: int, start_ts: float) -> dict:
        """Plain data for load generator `share` of `shares` to pace its part of the arrivals."""
        raise TypeError(f"the {self.name} profile paces no arrivals to share")

    def edit_note(self) -> str:
        """What EDIT in the web UI does for this profile."""
        return (
            f"EDIT does not apply to the {self.name} profile: it sets the user count itself; "
            "STOP, choose the manual profile and start again to ramp by hand"
        )

    def edit(self, users: int, spawn_rate: float, t: float) -> str | None:
        """EDIT at elapsed `t`: None when applied, else why not."""
        return self.edit_note()
