"""Rounds profile (the rounds study): an idle baseline, then rounds of N tasks, each ending when its tasks do.

RoundsPlan is the event-driven state machine agents drive (claim a task, report it finished); every
method takes `now` so it is tested without a clock. RoundsProfile adapts it to LoadTestShape.tick().
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.shape import Phase, Tick
from scenarios.traits import ProfileTraits

DEFAULT_LEVELS = (6, 8, 10)
DEFAULT_BASELINE_S = 10.0


@dataclass(frozen=True)
class RoundsParams:
    levels: tuple[int, ...] = DEFAULT_LEVELS  # --rounds: tasks submitted in each round
    baseline_s: float = DEFAULT_BASELINE_S  # --baseline: idle time before round 1
    round_hold_s: float | None = None  # --round-hold: longest a round waits; None = until tasks finish


@dataclass
class RoundRecord:
    """One round's boundaries and counts, as written to run.json "rounds"."""

    round: int
    concurrency: int
    start_ts: float
    end_ts: float | None = None
    submitted: int = 0
    finished: int = 0
    end_reason: str | None = None  # "tasks finished", "round hold reached", "run stopped"


class RoundsPlan:
    """Which round is current, how many tasks are left to submit in it, and where rounds began and ended."""

    def __init__(self, params: RoundsParams) -> None:
        self.params = params
        self.baseline_start_ts: float | None = None
        self.baseline_end_ts: float | None = None
        self.rounds: list[RoundRecord] = []
        self.stopped = False

    @property
    def current(self) -> RoundRecord | None:
        """The round in progress; None during the baseline and once all rounds are over."""
        last = self.rounds[-1] if self.rounds else None
        return last if last is not None and last.end_ts is None else None

    @property
    def done(self) -> bool:
        return self.stopped or (len(self.rounds) == len(self.params.levels) and self.current is None)

    def start(self, now: float) -> None:
        """Begin the idle baseline (call once, when the load test starts)."""
        self.baseline_start_ts = now
        self.advance(now)

    def advance(self, now: float) -> None:
        """Move on when the baseline is over or the current round has hit --round-hold (call every tick)."""
        if self.baseline_start_ts is None or self.done:
            return
        if self.baseline_end_ts is None:
            if now - self.baseline_start_ts >= self.params.baseline_s:
                self.baseline_end_ts = now
                self._open_next(now)
            return
        hold = self.params.round_hold_s
        cur = self.current
        if cur is not None and hold is not None and now - cur.start_ts >= hold:
            self._close(cur, now, "round hold reached")

    def claim(self, now: float) -> int | None:
        """An agent asks to submit a task: the round number to tag it with, or None if there is none."""
        self.advance(now)
        cur = self.current
        if cur is None or cur.submitted >= cur.concurrency:
            return None
        cur.submitted += 1
        return cur.round

    def note_submitted(self, round_no: int) -> None:
        """A load generator elsewhere (a Locust worker) took a slot of round `round_no` it was granted."""
        if 0 < round_no <= len(self.rounds):
            self.rounds[round_no - 1].submitted += 1

    def task_finished(self, round_no: int, now: float) -> None:
        """A task of round `round_no` reached a terminal state (done, failed, or failed to submit)."""
        record = self.rounds[round_no - 1]
        record.finished += 1
        if record.end_ts is None and record.finished >= record.concurrency:
            self._close(record, now, "tasks finished")

    def stop(self, now: float) -> None:
        """The run ended early: close the open round (or baseline) so boundaries stay complete."""
        self.stopped = True
        if self.baseline_start_ts is not None and self.baseline_end_ts is None:
            self.baseline_end_ts = now
        cur = self.current
        if cur is not None:
            cur.end_ts, cur.end_reason = now, "run stopped"

    def boundaries(self) -> list[dict]:
        """[{"round", "concurrency", "start_ts", "end_ts", ...}] for run.json and analysis."""
        return [asdict(r) for r in self.rounds]

    def _close(self, record: RoundRecord, now: float, reason: str) -> None:
        record.end_ts, record.end_reason = now, reason
        self._open_next(now)

    def _open_next(self, now: float) -> None:
        n = len(self.rounds)
        if n < len(self.params.levels):
            self.rounds.append(RoundRecord(n + 1, self.params.levels[n], now))


class RoundsProfile(ProfileTraits):
    """LoadTestShape adapter: 0 users in the baseline, one user per task of the current round."""

    name = "rounds"
    runs_in_rounds = True

    def __init__(self, params: RoundsParams, clock: Callable[[], float] = time.time) -> None:
        self.params = params
        self.plan = RoundsPlan(params)
        self._clock = clock

    def paced_by(self, start_ts: float) -> RoundsPlan:
        return self.plan

    def tick(self, t: float) -> Tick | None:
        now = self._clock()
        if self.plan.baseline_start_ts is None:
            self.plan.start(now - t)
        self.plan.advance(now)
        if self.plan.done:
            return None
        cur = self.plan.current
        if cur is None:
            return Tick(0, 1.0, "baseline")
        return Tick(cur.concurrency, float(cur.concurrency), f"round-{cur.round}")

    def peak_users(self) -> int:
        return max(self.params.levels)

    def phases(self) -> list[Phase]:
        origin = self.plan.baseline_start_ts
        if origin is None:
            return []
        spans = [Phase("baseline", 0.0, _rel(self.plan.baseline_end_ts, origin))]
        spans += [
            Phase(f"round-{r.round}", r.start_ts - origin, _rel(r.end_ts, origin)) for r in self.plan.rounds
        ]
        return spans


def build(opts: ProfileOptions) -> RoundsProfile:
    if opts.stages:
        raise ProfileConfigError("--stages does not apply to --load-profile rounds (use --rounds 6,8,10)")
    return RoundsProfile(
        RoundsParams(
            levels=opts.rounds or DEFAULT_LEVELS,
            baseline_s=DEFAULT_BASELINE_S if opts.baseline_s is None else opts.baseline_s,
            round_hold_s=opts.round_hold_s,
        )
    )


def _rel(ts: float | None, origin: float) -> float | None:
    return None if ts is None else ts - origin
