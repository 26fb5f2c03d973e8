"""Session drift read back from hand-set rows: tokens_in growing by a known amount per turn gives that
slope and a note naming the cause and the option; one turn per session, or flat sessions, say so. Also
the session keys each --session-policy gives.

Truth: the rows' tokens_in = 900 + 30 per turn.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from agents.loop.session_policy import renew_every, session_key
from analysis.drift import drift_section, session_calls, slope_per_turn, tokens_by_turn
from analysis.model import RunData


def run_of(sessions: int, turns: int, growth: float) -> RunData:
    rows = [
        {"ts": 100.0 + t * 10 + s, "session_id": f"run-a{s}", "ok": 1, "tokens_in": 900 + growth * t}
        for s in range(sessions)
        for t in range(turns)
    ]
    return RunData(path=Path("x"), meta={}, requests=pd.DataFrame(rows))


def test_growth_per_turn_is_read_back_and_named():
    run = run_of(sessions=3, turns=12, growth=30)
    calls = session_calls(run.requests)
    assert slope_per_turn(calls) == pytest.approx(30.0)
    by_turn = tokens_by_turn(calls)
    assert list(by_turn.index) == [*range(1, 10), 12] and by_turn.loc[12, "tokens_in_median"] == 900 + 30 * 11
    (note,) = drift_section(run).notes
    assert "grows +30.0 per turn" in note and "--session-policy" in note


def test_fresh_sessions_and_flat_sessions_say_so():
    assert "one turn per session" in drift_section(run_of(sessions=5, turns=1, growth=0)).notes[0]
    assert "flat" in drift_section(run_of(sessions=2, turns=6, growth=0)).notes[0]
    assert drift_section(RunData(path=Path("x"), meta={}, requests=None)) is None


def test_session_keys_of_each_policy():
    keys = {
        policy: [session_key("r", "a", turn, policy) for turn in range(4)]
        for policy in ("sticky", "fresh", "2")
    }
    assert keys["sticky"] == ["r-a"] * 4
    assert keys["fresh"] == ["r-a-s1", "r-a-s2", "r-a-s3", "r-a-s4"]
    assert keys["2"] == ["r-a-s1", "r-a-s1", "r-a-s2", "r-a-s2"]
    for bad in ("0", "-1", "often"):
        with pytest.raises(ValueError):
            renew_every(bad)
