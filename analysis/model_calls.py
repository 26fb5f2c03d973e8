"""The model's side of a run (model_calls.csv: every call the model answered, read at the model) joined to
the kit's own requests: which calls the kit made itself, which a gateway's own loop made inside a kit
request, and which no request of the run made (a gateway's background work, its retries), with tokens and
dollars at the model beside the kit's client-side totals. Pure math.

A call is the kit's own when its response id is a requests.csv `request_id`; it was made *inside* a kit
request when the user message opening its turn carries a kit agent's tag and it was answered while one of
that agent's requests was open (sent to last byte); otherwise no request of the run made it (Hermes' memory
review runs on a kit session, beside the next turn, but opens with its own prompt).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis import cost
from analysis.model import RunData, Section, per_run
from analysis.prices import PriceTableError
from contract.schema import MODEL_CALL, REQUEST, TASK

OWN, INSIDE, NONE = "the kit's own request", "inside a kit request (the gateway's own calls)", "no request"
JOIN_RULE = (
    "a call is the kit's own when its response id is a request's id; inside a kit request when its "
    "turn opens with that agent's tag and it was answered while one of the agent's requests was open; "
    "else no request of the run made it (background work, the gateway's retries)"
)
NOT_VISIBLE = "calls the gateway made on its own: not visible (the model is not the kit's)"


@dataclass(frozen=True)
class ModelSide:
    joined: pd.DataFrame  # model_calls.csv with `made_by` (OWN, INSIDE, NONE) and the joined request's id
    missed: int  # calls that fell out of the simulator's log before they were read


@per_run
def model_side(run: RunData) -> ModelSide | None:
    calls = run.model_calls
    if calls is None or calls.empty:
        return None
    recorded = run.meta.get("model_calls")
    missed = int(recorded.get("missed") or 0) if isinstance(recorded, dict) else 0
    return ModelSide(join_calls(calls, run.requests), missed)


def join_calls(calls: pd.DataFrame, requests: pd.DataFrame | None) -> pd.DataFrame:
    """Each model call with who made it (`made_by`) and the kit request it belongs to (`request_id`)."""
    out = calls.assign(made_by=NONE, request_id=None)
    if requests is None or requests.empty:
        return out
    own = out[MODEL_CALL.response_id].isin(set(requests[REQUEST.request_id].dropna()))
    out.loc[own, "made_by"] = OWN
    out.loc[own, "request_id"] = out.loc[own, MODEL_CALL.response_id]
    for agent, mine in out[~own & out[MODEL_CALL.agent_id].notna()].groupby(MODEL_CALL.agent_id):
        theirs = requests[requests[REQUEST.agent_id] == agent]
        inside = _open_request(mine[MODEL_CALL.ts].to_numpy(float), theirs)
        hit = inside >= 0
        out.loc[mine.index[hit], "made_by"] = INSIDE
        out.loc[mine.index[hit], "request_id"] = theirs[REQUEST.request_id].to_numpy()[inside[hit]]
    return out


def _open_request(times: np.ndarray, requests: pd.DataFrame) -> np.ndarray:
    """For each time, the position of the request open then (the latest sent before it), else -1."""
    if requests.empty:
        return np.full(len(times), -1)
    order = np.argsort(requests[REQUEST.ts].to_numpy(float))
    starts = requests[REQUEST.ts].to_numpy(float)[order]
    ends = starts + requests[REQUEST.latency_ms].fillna(0).to_numpy(float)[order] / 1000.0
    at = np.searchsorted(starts, times, side="right") - 1
    open_ = (at >= 0) & (times <= ends[np.clip(at, 0, None)])
    return np.where(open_, order[np.clip(at, 0, None)], -1)


def model_calls_section(run: RunData) -> Section | None:
    side = model_side(run)
    if side is None:
        return None
    joined = _priced(side.joined, run)
    section = Section("Model calls (at the model)")
    section.tables.append(("who made the calls the model answered", _by_maker(joined)))
    kit, source = cost.usage_rows(run)
    where = f"in {source}" if source != "none" else "in requests.csv"
    section.tables.append(
        ("the model's count beside the kit's", _beside_the_kit(joined, run.requests, kit, where))
    )
    section.notes.append(f"rule: {JOIN_RULE}")
    if run.tasks is not None and TASK.llm_calls in run.tasks and (board := run.tasks[TASK.llm_calls].sum()):
        section.notes.append(
            f"tasks.csv counts {board:,.0f} calls a task board's workers made: the model answered them "
            "outside any kit request (they are among 'no request'), and the kit's side counts them there"
        )
    if side.missed:
        section.notes.append(f"{side.missed} calls fell out of the simulator's log before they were read")
    return section


def _priced(joined: pd.DataFrame, run: RunData) -> pd.DataFrame:
    """The model's calls at the run's price table (`usd_table`), at the one model the kit's rows name; NaN
    when they name several (a call at the model does not say its model) or the table cannot be read."""
    table = cost.run_prices(run)
    models = cost.usage_rows(run)[0]["model"].dropna().unique()
    if isinstance(table, PriceTableError) or len(models) != 1:
        return joined.assign(usd_table=np.nan)
    rows = pd.DataFrame(
        {
            "model": models[0],
            REQUEST.tokens_in: pd.to_numeric(joined[MODEL_CALL.tokens_in], errors="coerce"),
            REQUEST.tokens_cached: pd.to_numeric(joined[MODEL_CALL.tokens_cached], errors="coerce"),
            REQUEST.tokens_cache_write: np.nan,
            REQUEST.tokens_out: pd.to_numeric(joined[MODEL_CALL.tokens_out], errors="coerce"),
            REQUEST.gateway_cost_usd: np.nan,
        },
        index=joined.index,
    )
    return joined.assign(usd_table=cost.price_rows(rows, table)[0]["usd_table"])


def _by_maker(joined: pd.DataFrame) -> pd.DataFrame:
    """Calls, tokens, tool calls and $ per maker; the $ at the model's own prices only where it has any
    (the simulator's price knobs are 0 unless set), the price table's beside them."""
    rows = []
    for maker in (OWN, INSIDE, NONE):
        mine = joined[joined["made_by"] == maker]
        rows.append(
            {
                "made by": maker,
                "calls": len(mine),
                "input tokens": mine[MODEL_CALL.tokens_in].sum(),
                "output tokens": mine[MODEL_CALL.tokens_out].sum(),
                "tool calls asked": mine[MODEL_CALL.tool_calls].sum(),
                "$ at the price table's rates": mine["usd_table"].sum(min_count=1),
                "$ at the model's prices": mine[MODEL_CALL.cost_usd].sum(),
            }
        )
    table = pd.DataFrame(rows).set_index("made by")
    return table if table["$ at the model's prices"].any() else table.drop(columns="$ at the model's prices")


def _beside_the_kit(
    joined: pd.DataFrame, requests: pd.DataFrame | None, kit: pd.DataFrame, where: str
) -> pd.DataFrame:
    """Calls and tokens at the model and in the kit's rows, like with like (every LLM call: requests.csv
    and a task board's tasks.csv); model calls and tool calls asked per kit request that made any. The
    tool calls are where a gateway that runs its tools and says nothing of them on its stream (OpenClaw)
    shows its loop: N asked at the model, 0 in requests.csv."""
    columns = [REQUEST.tokens_in, REQUEST.tokens_out, REQUEST.request_id, REQUEST.tool_calls]
    req = requests if requests is not None else pd.DataFrame(columns=columns)
    by_request = joined[joined["made_by"] != NONE].groupby("request_id")
    per_request = by_request.size()
    ids = req.dropna(subset=[REQUEST.request_id]).drop_duplicates(REQUEST.request_id)
    reported = ids.set_index(REQUEST.request_id)[REQUEST.tool_calls].reindex(per_request.index)
    rows = {
        "LLM calls": (len(joined), kit[TASK.llm_calls].sum()),
        "input tokens": (joined[MODEL_CALL.tokens_in].sum(), kit[REQUEST.tokens_in].sum()),
        "output tokens": (joined[MODEL_CALL.tokens_out].sum(), kit[REQUEST.tokens_out].sum()),
    }
    table = pd.DataFrame(rows, index=["at the model", where]).T.rename_axis("measure")
    table["difference (%)"] = (table["at the model"] / table[where].replace(0, np.nan) - 1) * 100
    calls = pd.DataFrame(
        {
            "at the model": [_mean(per_request), _mean(by_request[MODEL_CALL.tool_calls].sum())],
            where: [1.0, _mean(reported)],
        },
        index=[
            "model calls per kit request that made any",
            "tool calls asked per kit request that made any",
        ],
    )
    return pd.concat([table, calls]).rename_axis("measure")


def _mean(values: pd.Series) -> float:
    return float(values.mean()) if len(values) else np.nan
