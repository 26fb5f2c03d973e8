"""Cost tables of a run: tokens and dollars per model, per task and per 1,000 tasks, gateway-reported vs
computed, and the host's share per agent-hour and per task.

Pure functions on RunData and a PriceTable: no file reading, no printing. A model without a price, or a
call without usage, gives NaN (shown as n/a) and a warning line, never a zero or a guessed price. "As
billed" is what the gateway billed: its own cost wherever it reported one (LiteLLM's usage.cost or
x-litellm-response-cost), else the price table's rates; the table's figure stands beside it (usd_table),
and every headline $ says which of the two it came from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.model import RunData, Section, per_run
from analysis.prices import DEFAULT_PRICES_PATH, PriceTable, PriceTableError, load_prices
from analysis.stats import describe
from contract.schema import REQUEST, TASK, TASK_STATUS

MTOK = 1_000_000
HOURS_PER_MONTH = 365 * 24 / 12  # 730
TOKEN_COLUMNS = (
    REQUEST.tokens_in,
    REQUEST.tokens_cached,
    REQUEST.tokens_cache_write,
    REQUEST.tokens_out,
    REQUEST.tokens_reasoning,
)
DOLLAR_COLUMNS = ("usd_list", "usd_billed", "usd_table", "usd_floor")
TASK_PERCENTILES = (50, 95)
NO_MODEL = "(no model)"


@per_run
def usage_rows(run: RunData) -> tuple[pd.DataFrame, str]:
    """The rows that carry LLM usage and where they came from ("requests.csv", "tasks.csv", both, "none").

    Per-call rows (requests.csv) first; task rows (tasks.csv) add the usage of tasks whose LLM calls
    happened inside the gateway (task boards), unless a call row already carries that task's usage: a task
    is never counted twice. Each call row is one call; a task row counts its llm_calls.
    """
    calls = _with_usage(run.requests).assign(llm_calls=1.0)
    tasks = _with_usage(run.tasks)
    tasks = tasks[~tasks["task_id"].isin(calls["task_id"].dropna())]
    found = (("requests.csv", calls), ("tasks.csv", tasks))
    parts = {name: frame for name, frame in found if not frame.empty}
    if not parts:
        return _with_usage(None), "none"
    return pd.concat(parts.values(), ignore_index=True), " and ".join(parts)


@per_run
def run_prices(run: RunData) -> PriceTable | PriceTableError:
    """The run's price table (--prices, recorded in run.json; else the shipped one), or why not."""
    recorded = run.meta.get("cost")
    settings = recorded if isinstance(recorded, dict) else {}
    try:
        return load_prices(settings.get("prices") or DEFAULT_PRICES_PATH)
    except PriceTableError as exc:
        return exc


@per_run
def priced_usage(run: RunData, prices: PriceTable) -> tuple[pd.DataFrame, list[str]]:
    """The run's usage rows priced (price_rows), with the pricing warnings."""
    return price_rows(usage_rows(run)[0], prices)


def price_rows(rows: pd.DataFrame, prices: PriceTable) -> tuple[pd.DataFrame, list[str]]:
    """Add usd_list / usd_table / usd_floor to each usage row (NaN where the model has no USD price) and
    usd_billed: the gateway's own cost where it reported one, else usd_table."""
    priced = rows.copy()
    table = {model: prices.lookup(model) for model in priced["model"].dropna().unique()}
    usable = {model: p for model, p in table.items() if p is not None and p.currency == "USD"}
    for column in ("input", "cached_input", "cache_write", "output"):
        per_model = {model: getattr(price, column) for model, price in usable.items()}
        priced[f"_{column}"] = pd.to_numeric(priced["model"].map(per_model), errors="coerce")
    tokens_in, cached, write, out = (
        priced[c]
        for c in (REQUEST.tokens_in, REQUEST.tokens_cached, REQUEST.tokens_cache_write, REQUEST.tokens_out)
    )
    uncached = (tokens_in - cached.fillna(0) - write.fillna(0)).clip(lower=0)
    output_usd = out * priced["_output"]
    priced["usd_list"] = (tokens_in * priced["_input"] + output_usd) / MTOK
    priced["usd_table"] = (
        uncached * priced["_input"]
        + cached.fillna(0) * priced["_cached_input"]
        + write.fillna(0) * priced["_cache_write"]
        + output_usd
    ) / MTOK
    priced["usd_billed"] = priced[REQUEST.gateway_cost_usd].where(
        priced[REQUEST.gateway_cost_usd].notna(), priced["usd_table"]
    )
    priced["usd_floor"] = (tokens_in * priced["_cached_input"] + output_usd) / MTOK
    priced = priced.drop(columns=[c for c in priced.columns if c.startswith("_")])
    return priced, _pricing_warnings(priced, table, prices)


def cost_by_model(priced: pd.DataFrame) -> pd.DataFrame:
    """Calls, tokens and dollars per model plus a total row; dollars are NaN if any row in them is."""
    named = priced.assign(model=priced["model"].fillna(NO_MODEL))
    rows = [_ledger_row(str(model), group) for model, group in named.groupby("model", sort=True)]
    rows.append(_ledger_row("total", named))
    return pd.DataFrame(rows).set_index("model")


@dataclass(frozen=True)
class DollarTotal:
    """The run's LLM dollars as billed: each call at the cost the gateway reported for it where it did,
    else at the price table's rates; `usd` is NaN unless every call has one or the other."""

    usd: float
    calls: int
    gateway_usd: float  # the calls the gateway reported a cost for, at its figure (NaN: none)
    gateway_calls: int
    table_only_usd: float  # the calls it reported none for, at the table's rates (NaN: none)
    table_only_calls: int
    table_usd: float  # the table's figure over every call it prices, beside the gateway's (NaN: none)
    table_calls: int
    compared_calls: int  # calls with both figures
    diff_pct: float  # the table's figure vs the gateway's over those calls, in % of the gateway's

    @property
    def basis(self) -> str:
        if self.gateway_calls and self.table_only_calls:
            return "gateway and price table"
        return "gateway" if self.gateway_calls else "price table" if self.table_only_calls else "none"


def dollar_total(priced: pd.DataFrame) -> DollarTotal:
    """Sum the priced rows (price_rows output) per the DollarTotal rule."""
    listed = priced["usd_table"].notna()
    reported = priced[REQUEST.gateway_cost_usd].notna()
    table_only = listed & ~reported
    calls = priced[TASK.llm_calls].fillna(1)
    both = priced[listed & reported]
    gateway_both = both[REQUEST.gateway_cost_usd].sum()
    diff = (both["usd_table"].sum() - gateway_both) / gateway_both * 100 if gateway_both > 0 else np.nan
    return DollarTotal(
        usd=_strict_sum(priced["usd_billed"]),
        calls=int(calls.sum()),
        gateway_usd=priced[REQUEST.gateway_cost_usd].sum(min_count=1),
        gateway_calls=int(calls[reported].sum()),
        table_only_usd=priced.loc[table_only, "usd_table"].sum(min_count=1),
        table_only_calls=int(calls[table_only].sum()),
        table_usd=priced.loc[listed, "usd_table"].sum(min_count=1),
        table_calls=int(calls[listed].sum()),
        compared_calls=int(calls[listed & reported].sum()),
        diff_pct=diff,
    )


# The table's rates with cached input at its cache price where it has one: not "list price", which in the
# cost tables (usd_list) is every input token at the full input price.
AS_BILLED = "as billed at the price table's rates"
AS_REPORTED = "as the gateway reported it"


def describe_total(total: DollarTotal) -> str:
    """One line for the console and the report, naming where each $ figure came from."""
    if total.basis == "none":
        return f"LLM cost: n/a (none of {total.calls} calls has a list price or a gateway-reported cost)"
    if pd.isna(total.usd):
        head = f"LLM cost: n/a over {total.calls} calls (some have neither a list price nor a gateway cost)"
    else:
        head = f"LLM cost: ${_usd(total.usd)} over {total.calls} calls"
    if total.table_only_calls == total.calls:
        return f"{head}, every call {AS_BILLED}"
    if total.gateway_calls == total.calls:
        line = f"{head}, every call {AS_REPORTED}"
    else:
        parts = []
        if total.gateway_calls:
            parts.append(f"${_usd(total.gateway_usd)} {AS_REPORTED} for {total.gateway_calls} calls")
        if total.table_only_calls:
            parts.append(
                f"${_usd(total.table_only_usd)} {AS_BILLED} for {total.table_only_calls} calls the gateway "
                "reported no cost for"
            )
        line = f"{head}: " + "; ".join(parts)
    if total.compared_calls:
        line += (
            f"; the price table's rates give ${_usd(total.table_usd)} for the {total.table_calls} calls it "
            f"prices, {total.diff_pct:+.1f} % against the gateway's over the {total.compared_calls} calls "
            "with both"
        )
    elif total.gateway_calls:
        line += " (the price table does not price them)" if not total.table_calls else ""
    return line


def fictional_models(models, prices: PriceTable) -> list[str]:
    """The models among `models` whose price-table entry is marked fictional: a $ from them is no bill."""
    looked_up = (prices.lookup(str(model)) for model in pd.Series(models).dropna().unique())
    return sorted({price.model for price in looked_up if price is not None and price.fictional})


def _usd(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:,.6f}"


def gateway_comparison(priced: pd.DataFrame) -> pd.DataFrame:
    """Computed (at the price table's rates) vs gateway-reported dollars over the calls that have both,
    per model."""
    both = priced[priced[REQUEST.gateway_cost_usd].notna() & priced["usd_table"].notna()]
    rows = []
    for model, group in both.groupby("model", sort=True):
        computed, reported = group["usd_table"].sum(), group[REQUEST.gateway_cost_usd].sum()
        diff = (computed - reported) / reported * 100 if reported > 0 else np.nan
        rows.append(
            {
                "model": model,
                "calls": len(group),
                "usd_computed": computed,
                "usd_gateway": reported,
                "diff_pct": diff,
            }
        )
    return pd.DataFrame(
        rows, columns=["model", "calls", "usd_computed", "usd_gateway", "diff_pct"]
    ).set_index("model")


@per_run
def task_costs(run: RunData, prices: PriceTable) -> pd.DataFrame:
    """Dollars per task (list, billed and gateway-reported), from tasks.csv usage or else from requests
    grouped by task_id."""
    tasks = _with_usage(run.tasks)
    if tasks.empty:
        calls = _with_usage(run.requests)
        tasks = calls[calls["task_id"].notna()] if "task_id" in calls else calls.iloc[0:0]
    priced, _ = price_rows(tasks, prices)
    dollars = priced[["usd_list", "usd_billed", "usd_table", REQUEST.gateway_cost_usd]].rename(
        columns={REQUEST.gateway_cost_usd: "usd_gateway"}
    )
    sums = dollars.groupby(priced["task_id"], sort=False).sum()
    return sums.mask(
        dollars.isna().groupby(priced["task_id"], sort=False).any()
    )  # strict: n/a if any part is


def per_task_summary(costs: pd.DataFrame) -> pd.DataFrame:
    """$ per task mean / p50 / p95 with the number of priced tasks, and $ per 1,000 tasks."""
    rows = []
    bases = (
        ("list price", "usd_list"),
        ("as billed", "usd_billed"),
        ("at the price table's rates", "usd_table"),
        ("gateway-reported", "usd_gateway"),
    )
    for basis, column in bases:
        values = costs[column] if column in costs else pd.Series(dtype=float)
        stats = describe(values, percentiles=TASK_PERCENTILES)
        mean = float(values.mean()) if stats["n"] else np.nan
        rows.append(
            {
                "basis": basis,
                "tasks": stats["n"],
                "unpriced_tasks": int(values.isna().sum()),
                "usd_mean": mean,
                "usd_p50": stats["p50"],
                "usd_p95": stats["p95"],
                "usd_per_1000_tasks": mean * 1000,
                "small_sample": stats["small_sample"],
            }
        )
    return pd.DataFrame(rows).set_index("basis")


def tasks_per_hour(run: RunData) -> float | None:
    """Tasks done per hour of run time (run.json start/end, else the tasks' own span); None if none.

    Tasks are tasks.csv rows with status done, or, for chat agents without tasks.csv, the distinct task
    ids of successful requests.
    """
    count, first, last = _done_tasks(run)
    start, end = run.meta.get("start_ts"), run.meta.get("end_ts")
    if not isinstance(start, int | float) or not isinstance(end, int | float):
        start, end = first, last
    hours = (float(end) - float(start)) / 3600
    return count / hours if count and hours > 0 else None


def infra_cost(
    host_price_month: float, agents: float | None, tasks_hour: float | None, llm_usd_per_task: float | None
) -> pd.DataFrame:
    """Host $ per agent-hour at a capacity, and $ per task with the host's share beside the LLM's."""
    host_hour = host_price_month / HOURS_PER_MONTH
    host_per_task = host_hour / tasks_hour if tasks_hour else np.nan
    llm = np.nan if llm_usd_per_task is None else llm_usd_per_task
    rows = [
        ("host price", host_price_month, "$/month"),
        ("host price per hour", host_hour, "$/hour (730 h/month)"),
        ("agents", _or_nan(agents), "agents"),
        ("host per agent-hour", host_hour / agents if agents else np.nan, "$/agent-hour"),
        ("task throughput", _or_nan(tasks_hour), "tasks/hour"),
        ("host share per task", host_per_task, "$/task"),
        ("LLM per task (as billed, mean)", llm, "$/task"),
        ("total per task", host_per_task + llm, "$/task"),
    ]
    return pd.DataFrame(rows, columns=["item", "value", "unit"]).set_index("item")


def cost_section(
    run: RunData,
    prices: PriceTable | PriceTableError,
    host_price_month: float | None = None,
    capacity_agents: float | None = None,
) -> Section | None:
    """The report's cost section; None when the run has no usage and no host price was given.

    Given the PriceTableError of a bad price file instead of a table, tokens are still shown, every dollar
    column is n/a and the error's line is in the notes.
    """
    rows, source = usage_rows(run)
    if source == "none" and host_price_month is None:
        return None
    section = Section(title="Cost")
    if isinstance(prices, PriceTableError):
        section.notes.append(f"error: {prices}")
        prices = PriceTable(origin="(none: the price file was rejected)", prices={})
    priced, warnings = priced_usage(run, prices)
    per_task = per_task_summary(task_costs(run, prices))
    if source != "none":
        section.notes.append(describe_total(dollar_total(priced)))
        section.tables.append(("LLM cost by model (USD)", cost_by_model(priced)))
        section.tables.append(("LLM cost per task (USD)", per_task))
        _add_gateway_table(section, priced)
    if host_price_month is not None:
        agents, label = _agents(run, capacity_agents)
        llm = per_task.loc["as billed", "usd_mean"]
        if pd.isna(llm):  # no list price: the gateway's own figure, said so in the notes
            llm = per_task.loc["gateway-reported", "usd_mean"]
            section.notes.append("LLM per task in the infra table: the gateway-reported mean (no list price)")
        section.tables.append(
            ("Infra cost", infra_cost(host_price_month, agents, tasks_per_hour(run), _or_none(llm)))
        )
        section.notes.append(f"Agents for the per-agent-hour figure: {label}.")
    section.notes.extend(_source_notes(source, priced, prices) + _unreported(run, source) + warnings)
    return section


def _with_usage(frame: pd.DataFrame | None) -> pd.DataFrame:
    """Rows with any token count or gateway cost, the contract's usage columns always present."""
    columns = ("task_id", "model", TASK.llm_calls, REQUEST.gateway_cost_usd, *TOKEN_COLUMNS)
    if frame is None:
        return pd.DataFrame(
            {c: pd.Series(dtype=object if c in ("task_id", "model") else float) for c in columns}
        )
    out = pd.DataFrame(index=frame.index)
    for column in columns:
        text = column in ("task_id", "model")
        raw = frame[column] if column in frame else pd.Series(np.nan, index=frame.index)
        out[column] = (
            raw.astype(object).where(raw.notna(), None) if text else pd.to_numeric(raw, errors="coerce")
        )
    has_usage = out[[REQUEST.tokens_in, REQUEST.tokens_out, REQUEST.gateway_cost_usd]].notna().any(axis=1)
    return out[has_usage]


def _pricing_warnings(priced: pd.DataFrame, table: dict, prices: PriceTable) -> list[str]:
    lines = []
    for model, price in sorted(table.items()):
        if price is None:
            lines.append(f"warning: model '{model}' is not in price table {prices.origin}: its cost is n/a")
        elif price.currency != "USD":
            lines.append(
                f"warning: model '{model}' is priced in {price.currency}; the kit sums USD only: n/a"
            )
    unnamed = int(priced["model"].isna().sum())
    if unnamed:
        lines.append(f"warning: {unnamed} rows have usage but no model name: their cost is n/a")
    missing = int(
        (priced["model"].notna() & priced[[REQUEST.tokens_in, REQUEST.tokens_out]].isna().any(axis=1)).sum()
    )
    if missing:
        lines.append(f"warning: {missing} rows lack input or output token counts: their cost is n/a")
    return lines


def _ledger_row(model: str, group: pd.DataFrame) -> dict:
    row: dict = {"model": model, "calls": int(group[TASK.llm_calls].fillna(1).sum())}
    row.update({c: group[c].sum(min_count=1) for c in TOKEN_COLUMNS})
    row.update({c: _strict_sum(group[c]) for c in DOLLAR_COLUMNS})
    row["usd_gateway"] = group[REQUEST.gateway_cost_usd].sum(min_count=1)
    return row


def _done_tasks(run: RunData) -> tuple[int, float, float]:
    """How many tasks finished well, and the first and last timestamps of their span."""
    tasks, calls = run.tasks, run.requests
    if tasks is not None and not tasks.empty:
        done = tasks[tasks["status"] == TASK_STATUS.done]
        return len(done), tasks[TASK.submitted_ts].min(), done[TASK.finished_ts].max()
    if calls is None or "task_id" not in calls:
        return 0, np.nan, np.nan
    ok = calls[(calls["ok"] == 1) & calls["task_id"].notna()]
    return ok["task_id"].nunique(), calls["ts"].min(), ok["ts"].max()


def _strict_sum(values: pd.Series) -> float:
    """A sum that is unavailable (NaN) when any part is: a partial total would understate the bill."""
    return float(values.sum()) if len(values) and values.notna().all() else np.nan


def _add_gateway_table(section: Section, priced: pd.DataFrame) -> None:
    comparison = gateway_comparison(priced)
    reported = priced[REQUEST.gateway_cost_usd].notna()
    if comparison.empty and not reported.any():
        section.notes.append(
            "The gateway reported no cost of its own (no x-litellm-response-cost, usage.cost)."
        )
    elif comparison.empty:
        total = _usd(priced[REQUEST.gateway_cost_usd].sum())
        section.notes.append(
            f"The gateway reported ${total} over {int(reported.sum())} "
            "calls (column usd_gateway); no list price to compare it with."
        )
    else:
        section.tables.append(("Computed vs gateway-reported cost", comparison))


def _agents(run: RunData, capacity_agents: float | None) -> tuple[float | None, str]:
    if capacity_agents:
        return float(capacity_agents), f"measured capacity, {capacity_agents:g} agents"
    ids = set()
    for frame in (run.requests, run.tasks):
        if frame is not None and "agent_id" in frame:
            ids.update(frame["agent_id"].dropna())
    if not ids:
        return None, "unknown (no capacity given, no agents in this run): $/agent-hour is n/a"
    return float(len(ids)), f"{len(ids)} distinct agents in this run (not a measured capacity)"


def price_dates(models, prices: PriceTable) -> str:
    """ "Price table: FILE; MODEL as of DATE, ...": where the dollars came from, and how old they are."""
    looked_up = (prices.lookup(model) for model in models)
    used = {price.model: price for price in looked_up if price is not None}
    dated = ", ".join(
        f"{p.model} as of {p.as_of}" + (" (FICTIONAL)" if p.fictional else "")
        for _, p in sorted(used.items())
    )
    return f"Price table: {prices.origin}" + (f"; {dated}." if dated else ".")


def _source_notes(source: str, priced: pd.DataFrame, prices: PriceTable) -> list[str]:
    notes = [price_dates(priced["model"].dropna().unique(), prices)]
    if source != "none":
        notes.append(
            f"Usage from {source}. List price = every input token at the input price; at the table's rates "
            "(usd_table) = cache reads at the cached price and cache writes at the cache-write price; as "
            "billed = the gateway's own cost where it reported one, else the table's rates; floor = every "
            "input token a cache hit."
        )
    return notes


def _unreported(run: RunData, source: str) -> list[str]:
    """Calls that named a model but reported no usage: their cost is unknown, not zero."""
    frame = run.requests
    if "requests" not in source or frame is None or "model" not in frame:
        return []
    named = frame["model"].notna()
    silent = int(
        (
            named
            & frame[[REQUEST.tokens_in, REQUEST.tokens_out, REQUEST.gateway_cost_usd]].isna().all(axis=1)
        ).sum()
    )
    if not silent:
        return []
    return [f"warning: {silent} calls named a model but reported no usage: their cost is not in these totals"]


def _or_nan(value: float | None) -> float:
    return np.nan if value is None else float(value)


def _or_none(value: float) -> float | None:
    return None if pd.isna(value) else float(value)
