"""The Sessions section of a `--sessions` replay: how faithfully it kept the recording (each call's start
against the recorded think time after the previous answer, tokens in against the recorded usage, steps
per session), and per recorded session the replay's model time and dollars beside the recording's own,
so "same agent, more of them" is one table. The recording's figures travel on the replay's own rows
(requests.csv `recorded_*`, tasks.csv `recorded_session`, `recorded_steps`): the run directory needs
no session file to be read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import cost
from analysis.model import RunData, Section
from analysis.prices import PriceTable, PriceTableError
from analysis.stats import describe
from analysis.validity import SECTION as VALIDITY_SECTION
from analysis.validity import run_validity
from contract.schema import MCP_PREFIX, REQUEST, TASK, TASK_STATUS

TITLE = "Sessions"
SHOWN = (50, 95)
MAX_STEP_ROWS = 40  # a per-step table longer than this is shown per step across sessions
LATENESS_RULE = (
    "start lateness: a replayed call sent minus when it was due, the previous answer's end plus the think "
    "time recorded before it (over --sessions-speed); a session's first call has none"
)


def replay_rows(run: RunData) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(the replayed sessions' task rows, their model calls' rows); None when the run replayed none. The
    copies' MCP tool calls are the report's MCP rows, not model time."""
    tasks, requests = run.tasks, run.requests
    if tasks is None or requests is None or tasks[TASK.recorded_session].isna().all():
        return None
    tasks = tasks[tasks[TASK.recorded_session].notna()]
    model_calls = ~requests[REQUEST.operation].astype(str).str.startswith(MCP_PREFIX)
    return tasks, requests[requests[REQUEST.task_id].isin(tasks[TASK.task_id]) & model_calls]


def ended(tasks: pd.DataFrame) -> pd.DataFrame:
    """The copies that ran to their end (an answer or a failed call), not those the run's stop cut."""
    return tasks[tasks[TASK.status] != TASK_STATUS.unfinished]


def fidelity_table(tasks: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """Start lateness (ms), tokens in over the recorded usage, and steps replayed over recorded (ratios),
    each with its n and p50/p95."""
    asked = requests[REQUEST.asked_tokens_in]
    ratio = (requests[REQUEST.tokens_in] / asked).where(asked > 0)
    copies = ended(tasks)
    rows = {
        "start lateness (ms)": describe(requests[REQUEST.replay_late_ms], percentiles=SHOWN),
        "tokens in / recorded": describe(ratio, percentiles=SHOWN),
        "steps replayed / recorded": describe(
            copies[TASK.steps] / copies[TASK.recorded_steps], percentiles=SHOWN
        ),
    }
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("replay fidelity")


def priced(requests: pd.DataFrame, prices: PriceTable | PriceTableError) -> pd.DataFrame:
    """The replayed rows with each call's list-price dollars as replayed (`usd`) and as the recording
    sized it (`usd_recorded`): priced once, for both tables (NaN when the price table was refused)."""
    return requests.assign(usd=_usd(requests, prices), usd_recorded=_usd(_as_recorded(requests), prices))


def per_session_table(tasks: pd.DataFrame, requests: pd.DataFrame) -> pd.DataFrame:
    """One row per recorded session: copies replayed and done, steps, model time and dollars per copy
    (p50 over its done copies) beside the recording's own (NaN where the recording has none), from the
    `priced` rows."""
    replayed = _per_copy(requests, REQUEST.latency_ms, REQUEST.tokens_in, REQUEST.tokens_out, "usd")
    recorded = _per_copy(*_recorded_figures(requests))
    rows = []
    for name, copies in tasks.groupby(TASK.recorded_session, sort=False):
        done = copies[copies[TASK.status] == TASK_STATUS.done][TASK.task_id]
        steps = ended(copies)[TASK.steps]
        rows.append(
            {
                "session": name,
                "copies": len(copies),
                "done": len(done),
                "steps recorded": copies[TASK.recorded_steps].iloc[0],
                "steps replayed p50": _median(steps),
                "model time ms p50": _median(replayed["ms"].reindex(done)),
                "model time ms recorded": _median(recorded["ms"].reindex(done)),
                "$ p50 (list)": _median(replayed["usd"].reindex(done)),
                "$ recorded (list)": _median(recorded["usd"].reindex(done)),
            }
        )
    return pd.DataFrame(rows).set_index("session")


def per_step_table(tasks: pd.DataFrame, requests: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Per recorded session and step, the replayed calls' latency and dollars (p50) beside the recorded
    call's own, from the `priced` rows; past MAX_STEP_ROWS rows, per step across the sessions (a file of
    many). A call the recording did not have (`--live-tools`) is counted, its recorded figures blank.
    (table, its grain)."""
    session = requests[REQUEST.task_id].map(tasks.set_index(TASK.task_id)[TASK.recorded_session])
    rows = requests.assign(
        session=session,
        **{REQUEST.step: requests[REQUEST.step].astype("Int64")},  # 1-based, whole
    )
    keys = ["session", REQUEST.step]
    grain = "per recorded session and step"
    if rows.groupby(keys).ngroups > MAX_STEP_ROWS:
        keys, grain = [REQUEST.step], "per step, across the recorded sessions"
    table = rows.groupby(keys).agg(
        calls=(REQUEST.latency_ms, "size"),
        **{
            "latency ms p50": (REQUEST.latency_ms, "median"),
            "latency ms recorded": (REQUEST.recorded_latency_ms, "median"),
            "TTFT ms p50": (REQUEST.ttft_ms, "median"),
            "$ p50 (list)": ("usd", "median"),
            "$ recorded (list)": ("usd_recorded", "median"),
        },
    )
    return table, grain


def _median(values: pd.Series) -> float:
    """The median of the figures there are; NaN (shown as not scored) when there are none."""
    clean = values.dropna()
    return float(clean.median()) if len(clean) else np.nan


def _as_recorded(requests: pd.DataFrame) -> pd.DataFrame:
    """The replayed rows with the recording's own latency and sizes in place of the replay's."""
    return requests.assign(
        **{
            REQUEST.latency_ms: requests[REQUEST.recorded_latency_ms],
            REQUEST.tokens_in: requests[REQUEST.asked_tokens_in],
            REQUEST.tokens_out: requests[REQUEST.recorded_tokens_out],
            REQUEST.tokens_cached: np.nan,
            REQUEST.tokens_cache_write: np.nan,
        }
    )


def _usd(rows: pd.DataFrame, prices: PriceTable | PriceTableError) -> pd.Series | float:
    """Each row's list-price dollars; NaN throughout when the price table was refused."""
    return cost.price_rows(rows, prices)[0]["usd_list"] if not isinstance(prices, PriceTableError) else np.nan


def sessions_section(run: RunData) -> Section | None:
    """The Sessions section; None when the run replayed no session file."""
    found = replay_rows(run)
    if found is None:
        return None
    tasks, requests = found
    prices = cost.run_prices(run)
    rows = priced(requests, prices)
    section = Section(TITLE)
    section.tables += validity_marks(run)
    section.tables.append(("replay fidelity", fidelity_table(tasks, requests)))
    section.tables.append(("per recorded session, beside the recording", per_session_table(tasks, rows)))
    steps, grain = per_step_table(tasks, rows)
    section.tables.append((f"{grain}, beside the recording", steps))
    section.notes.append(LATENESS_RULE)
    section.notes += _gaps(requests, prices)
    section.notes.append(
        "model time: a copy's calls' latency summed (think times apart), p50 over its done copies; "
        "dollars at list price for the run's model on both sides (the recording names no cached tokens); "
        "the copy tag adds a few tokens a call unless --identical-copies"
    )
    return section


def validity_marks(run: RunData) -> list[tuple[str, pd.DataFrame]]:
    """The run's validity mark (RUN INVALID, LATENCY SUSPECT; analysis/validity.py, the verdict of run.json
    and the Load generator section) as a table heading the section's timing figures; none when it held:
    at ×100 agents a load generator's own lag reads as a slower gateway."""
    validity = run_validity(run)
    mark = validity.mark()
    if mark is None:
        return []
    row = {
        "mark": mark,
        "why": "; ".join(c.reason() for c in validity.failed),
        "what it means": "start lateness, model time and latency below may be the load generator's own "
        f"delay, not the gateway's (the rules: report.md, {VALIDITY_SECTION})",
    }
    return [("run validity", pd.DataFrame([row]).set_index("mark"))]


def _gaps(requests: pd.DataFrame, prices: PriceTable | PriceTableError) -> list[str]:
    """What the recording lacks, said rather than made up."""
    notes = []
    n = len(requests)
    for column, what in (
        (
            REQUEST.asked_tokens_in,
            "recorded prompt tokens: their token ratio and the recording's $ are not scored",
        ),
        (REQUEST.recorded_tokens_out, "recorded completion tokens: the recording's $ is not scored"),
        (REQUEST.recorded_latency_ms, "recorded latency: the recording's model time is not scored"),
    ):
        lacking = int(requests[column].isna().sum())
        if lacking:
            notes.append(f"{lacking} of {n} replayed calls have no {what}")
    if isinstance(prices, PriceTableError):
        notes.append(f"no dollars: the price table was refused ({prices})")
    return notes


def compare_measures(run: RunData) -> tuple[dict[str, float], dict[str, float]] | None:
    """A replay run's measures for `python -m analysis compare` (one agent, many gateways: one table):
    (as replayed, as recorded), per copy p50 over its done copies; None when the run replayed none."""
    found = replay_rows(run)
    if found is None:
        return None
    tasks, requests = found
    rows = priced(requests, cost.run_prices(run))
    done = tasks[tasks[TASK.status] == TASK_STATUS.done][TASK.task_id]
    replayed = _per_copy(rows, REQUEST.latency_ms, REQUEST.tokens_in, REQUEST.tokens_out, "usd").reindex(done)
    recorded = _per_copy(*_recorded_figures(rows)).reindex(done)
    ok = rows[rows["ok"] == 1]
    at_model = len(run.model_calls) if run.model_calls is not None else np.nan
    mine = {
        "copies done": float(len(done)),
        "model calls": float(len(rows)),
        "model calls at the model": float(at_model),
        **_copy_medians(replayed),
        "model call latency p50 (ms)": _percentile(ok[REQUEST.latency_ms], 50),
        "model call latency p95 (ms)": _percentile(ok[REQUEST.latency_ms], 95),
    }
    theirs = {
        **_copy_medians(recorded),
        "model calls per copy p50": _median(tasks.set_index(TASK.task_id)[TASK.recorded_steps].reindex(done)),
        "model call latency p50 (ms)": _percentile(ok[REQUEST.recorded_latency_ms], 50),
        "model call latency p95 (ms)": _percentile(ok[REQUEST.recorded_latency_ms], 95),
    }
    return mine, theirs


def _recorded_figures(rows: pd.DataFrame) -> tuple[pd.DataFrame, str, str, str, str]:
    """`_per_copy`'s arguments for the recording's own figures, which travel on the replay's rows."""
    return (
        rows,
        REQUEST.recorded_latency_ms,
        REQUEST.asked_tokens_in,
        REQUEST.recorded_tokens_out,
        "usd_recorded",
    )


def _per_copy(rows: pd.DataFrame, ms: str, tokens_in: str, tokens_out: str, usd: str) -> pd.DataFrame:
    """Per copy: its model calls, and the sums of its calls' latency, tokens and dollars (NaN when any of
    its calls lacks the figure: never a partial total)."""
    frame = pd.DataFrame({"ms": rows[ms], "in": rows[tokens_in], "out": rows[tokens_out], "usd": rows[usd]})
    by_task = rows[REQUEST.task_id]
    sums = frame.groupby(by_task).sum(min_count=1).mask(frame.isna().groupby(by_task).any())
    return sums.assign(calls=frame.groupby(by_task).size())


def _copy_medians(copies: pd.DataFrame) -> dict[str, float]:
    return {
        "model calls per copy p50": _median(copies["calls"]),
        "model time per copy p50 (ms)": _median(copies["ms"]),
        "tokens in per copy p50": _median(copies["in"]),
        "tokens out per copy p50": _median(copies["out"]),
        "$ per copy p50 (list)": _median(copies["usd"]),
    }


def _percentile(values: pd.Series, q: float) -> float:
    clean = values.dropna()
    return float(np.percentile(clean, q)) if len(clean) else np.nan
