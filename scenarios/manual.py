"""Manual profile: Locust's own -u/-r/-t, which Locust ignores once a shape class exists.

Also what the web UI's user count and spawn rate fields drive (the load shape in locustfile.py sets
use_common_options).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.shape import Phase, Tick
from scenarios.traits import EDIT_APPLIES, ProfileTraits


@dataclass(frozen=True)
class ManualParams:
    users: int = 1  # -u
    spawn_rate: float = 1.0  # -r
    run_time_s: float | None = None  # -t; None runs until stopped


class ManualProfile(ProfileTraits):
    """Ramp at -r users/s to -u users, hold until -t (or forever); EDIT in the web UI ramps again."""

    name = "manual"

    def __init__(self, params: ManualParams) -> None:
        self.params = params
        self._ramp_s = params.users / params.spawn_rate
        self._ramp_end_s = self._ramp_s
        self.edits = 0
        if params.run_time_s is not None:
            self.end_s = params.run_time_s

    def tick(self, t: float) -> Tick | None:
        p = self.params
        if p.run_time_s is not None and t >= p.run_time_s:
            return None
        ramping = t < self._ramp_end_s
        if not self.edits:
            return Tick(p.users, p.spawn_rate, "ramp-up" if ramping else "plateau")
        return Tick(p.users, p.spawn_rate, f"edit {self.edits}: {'ramp to' if ramping else 'hold'} {p.users}")

    def edit(self, users: int, spawn_rate: float, t: float) -> None:
        """From `t` on, ramp from the current target to `users` at `spawn_rate` users/s, then hold."""
        ramp_s = abs(users - self.params.users) / spawn_rate
        self.params = replace(self.params, users=users, spawn_rate=spawn_rate)
        self._ramp_end_s = t + ramp_s
        self.edits += 1

    def edit_note(self) -> str:
        return EDIT_APPLIES

    def peak_users(self) -> int:
        return self.params.users

    def phases(self) -> list[Phase]:
        end = self.params.run_time_s
        if end is not None and end <= self._ramp_s:
            return [Phase("ramp-up", 0.0, end)]
        spans = [Phase("ramp-up", 0.0, self._ramp_s), Phase("plateau", self._ramp_s, end)]
        return [ph for ph in spans if ph.end_s is None or ph.end_s > ph.start_s]

    def paced_by(self, start_ts: float) -> None:
        """Closed model: agents loop with their own wait time."""


def build(opts: ProfileOptions) -> ManualProfile:
    if opts.run_time_s is not None and opts.run_time_s <= 0:  # else taken as no -t: a run without end
        raise ProfileConfigError(
            "-t/--run-time 0s: a run must last longer than 0s (leave -t out to run until stopped)"
        )
    d = ManualParams()
    return ManualProfile(
        ManualParams(
            users=d.users if opts.num_users is None else int(opts.num_users),
            spawn_rate=float(opts.spawn_rate or d.spawn_rate),
            run_time_s=float(opts.run_time_s) if opts.run_time_s else None,
        )
    )
