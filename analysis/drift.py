"""Session drift: tokens_in by turn of a gateway session and over the run's time. A gateway that keeps
history (Hermes) resends it each turn of a sticky session, so tokens_in (and cost) grow with the test's
own length; this section shows by how much.

Pure: requests.csv rows in, tables and notes out; no file reading.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.model import RunData, Section
from contract.schema import REQUEST

TIME_BINS = 10
SHOWN_TURNS = 10  # turns 1..9 and the last one are listed; the slope uses every call
DRIFT_TOKENS_PER_TURN = 1.0  # a slope under this is flat


def session_calls(requests: pd.DataFrame | None) -> pd.DataFrame:
    """Successful calls with a session and tokens_in, each numbered by its turn in its session (1-based);
    of an agent-loop task, its first step."""
    if requests is None or not {"session_id", REQUEST.tokens_in} <= set(requests.columns):
        return pd.DataFrame(columns=["ts", "session_id", REQUEST.tokens_in, "turn"])
    ok = requests[
        (requests["ok"] == 1) & requests["session_id"].notna() & requests[REQUEST.tokens_in].notna()
    ]
    if "step" in ok:  # an agent loop's task is one turn: its first call (the loop's own growth is not drift)
        ok = ok[ok["step"].isna() | (ok["step"] == 1)]
    calls = ok[["ts", "session_id", REQUEST.tokens_in]].sort_values("ts").copy()
    calls["turn"] = calls.groupby("session_id").cumcount() + 1
    return calls


def tokens_by_turn(calls: pd.DataFrame) -> pd.DataFrame:
    """Calls and median tokens_in per turn number (the first turns and the last)."""
    grouped = calls.groupby("turn")[REQUEST.tokens_in].agg(calls="size", tokens_in_median="median")
    shown = sorted(set(grouped.index[: SHOWN_TURNS - 1]) | {grouped.index.max()})
    return grouped.loc[shown]


def tokens_over_time(calls: pd.DataFrame) -> pd.DataFrame:
    """Median tokens_in in equal tenths of the run's span, from its first call (s)."""
    start = calls["ts"].min()
    span = max(float(calls["ts"].max() - start), 1e-9)
    edges = np.linspace(0, span, TIME_BINS + 1)
    window = pd.cut(calls["ts"] - start, edges, include_lowest=True, labels=False)
    table = calls.groupby(window)[REQUEST.tokens_in].agg(calls="size", tokens_in_median="median")
    table.index = pd.Index([round(float(edges[int(i)]), 1) for i in table.index], name="from_s")
    return table


def slope_per_turn(calls: pd.DataFrame) -> float | None:
    """Least-squares tokens_in per turn over every call; None with fewer than two turn numbers."""
    if calls["turn"].nunique() < 2:
        return None
    return float(np.polyfit(calls["turn"].astype(float), calls[REQUEST.tokens_in].astype(float), 1)[0])


def drift_section(run: RunData) -> Section | None:
    """The report's Session drift section; None when no call carries a session and tokens_in."""
    calls = session_calls(run.requests)
    if calls.empty:
        return None
    section = Section(title="Session drift")
    section.tables.append(("tokens_in by turn of a session", tokens_by_turn(calls)))
    section.tables.append(("tokens_in over the run", tokens_over_time(calls)))
    section.notes.append(_verdict(calls, slope_per_turn(calls)))
    return section


def _verdict(calls: pd.DataFrame, slope: float | None) -> str:
    sessions, turns = calls["session_id"].nunique(), int(calls["turn"].max())
    head = f"{len(calls)} calls in {sessions} sessions, up to {turns} turns each"
    if slope is None:
        return f"{head}: one turn per session, tokens_in cannot drift by turn."
    if slope < DRIFT_TOKENS_PER_TURN:
        return f"{head}: tokens_in flat by turn ({slope:+.1f} per turn)."
    return (
        f"{head}: tokens_in grows {slope:+.1f} per turn within a session. The gateway resends the session's "
        "history: later calls cost more because of the test's own length, not the load. "
        "--session-policy fresh (or N turns) bounds it."
    )
