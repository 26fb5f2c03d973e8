"""The headline of a run: the question its profile asks, the verdict in one sentence, and a few figures
with units, each naming the report table it comes from. Pure: RunData in, a Headline out; every number
comes from the same table functions the report's sections print.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import pandas as pd

from analysis import cost, prices
from analysis.answers import Answer, default_rule, load_answer, thresholds
from analysis.breaking import first_break, highest_held
from analysis.capacity import run_capacity, run_churn
from analysis.capacity_rows import has_rows, is_churn
from analysis.churn import kept_text
from analysis.goodput import goodput
from analysis.latency import latency_table, main_operation
from analysis.levels import ARRIVALS_PER_S, Levels, asked_rate, load_shortfall, run_levels
from analysis.model import RunData, per_run
from analysis.rounds import rounds_table
from analysis.scores import tpot_absent
from analysis.soak import Trend, soak_trends
from analysis.sweep import best_text, broke_text, sweep
from analysis.tasks import not_done_text
from analysis.validity import Validity, run_validity
from analysis.working_fit import FIT, fit_answer
from contract.exit_codes import DISK_ERROR, LOAD_NOT_DELIVERED

# Titles of the report sections the figures come from (analysis/report.py uses the same names).
CAPACITY, CHURN, ROUNDS, SOAK = "Capacity", "Churn (open, prompt, close)", "Rounds", "Soak verdict"
LATENCY, THRESHOLDS, COST = "Latency per operation", "Run summary", "Cost"
LEVELS, GOODPUT, SWEEP, ARRIVALS = "Load levels and knee", "Goodput", "Sweep", "Arrivals"
TASKS = "Tasks"
SOAK_FAILED = ("leak", "drift")  # the soak verdicts that answer No (analysis/soak.py's positive words)


@dataclass(frozen=True)
class Figure:
    """One headline number: its words, value (a number or a phrase), unit and source table; `note` says
    what the value rests on where the label cannot (a fictional price, the gateway's own bill)."""

    label: str
    value: float | int | str | None
    unit: str
    source: str
    note: str = ""

    def text(self) -> str:
        return self._value_text() + (f" ({self.note})" if self.note else "")

    def _value_text(self) -> str:
        if self.value is None or (isinstance(self.value, float) and pd.isna(self.value)):
            return f"{self.label}: not measured"
        if isinstance(self.value, str):
            return f"{self.label}: {self.value}"
        number = _three_digits(self.value)
        if self.unit == "$":
            return f"{self.label}: ${number}"
        return f"{self.label}: {number}{' ' + self.unit if self.unit else ''}"


def _three_digits(value: float) -> str:
    """Three significant digits, never in exponent form ($0.0000880, not $8.8e-05)."""
    if float(value).is_integer() or abs(value) >= 99.95:
        return f"{value:,.0f}"
    decimals = 2 - math.floor(math.log10(abs(value)))
    return f"{value:,.{decimals}f}"


@dataclass
class Headline:
    """The profile's question; the verdict, its answer ("Yes: ...", "No: ..." or "Not answered: ...") with
    the rule that decided it; the figures behind it."""

    profile: str
    question: str
    verdict: str
    figures: list[Figure] = field(default_factory=list)
    held: bool | None = None  # the answer: True (Yes), False (No), None (not answered)

    @classmethod
    def answered(cls, profile: str, question: str, answer: Answer, figures: list[Figure]) -> Headline:
        return cls(profile, question, answer.text(), figures, answer.held)

    def lines(self) -> list[str]:
        """Console form: question and verdict, then one figure per line with its source."""
        return [f"{self.question} {self.verdict}"] + [f"  {f.text()}  [{f.source}]" for f in self.figures]


def profile_of(run: RunData) -> str:
    """The profile name from run.json; else what the files say (capacity.csv means capacity or churn)."""
    name = (run.meta.get("profile") or {}).get("name")
    if isinstance(name, str) and name:
        return name
    if has_rows(run.capacity):
        assert run.capacity is not None
        return "churn" if is_churn(run.capacity) else "capacity"
    return "unknown"


@per_run
def headline(run: RunData) -> Headline:
    """The headline for the run's profile, plus cost figures when the run recorded usage."""
    profile = profile_of(run)
    build = BUILDERS.get(profile, _load_headline)
    head = build(run, profile)
    head.figures += _threshold_figures(run) + cost_figures(run)
    head.verdict += _ending(run.meta)
    _mark_validity(head, run_validity(run))
    return head


def _mark_validity(head: Headline, validity: Validity) -> None:
    """A suspect or invalid run says so in its answer, and every timing figure of its headline says so."""
    if not validity.suspect:
        return
    state = "RUN INVALID" if validity.valid is False else "LATENCY SUSPECT"
    reasons = "; ".join(c.reason() for c in validity.failed)
    head.verdict += f" {state}: {reasons}; every timing figure below is marked."
    head.figures = [
        replace(f, note=f"{f.note}; {state}" if f.note else state) if _timing(f) else f for f in head.figures
    ]


def _timing(figure: Figure) -> bool:
    """A measured time (ms): what a suspect or invalid run's load generator may have timed late."""
    value = figure.value
    return figure.unit == "ms" and isinstance(value, int | float) and not pd.isna(value)


def _unanswered(profile: str, question: str, why: str) -> Headline:
    return Headline.answered(profile, question, Answer(None, why, default_rule(profile)), [])


def _ending(meta: dict) -> str:
    """What the verdict adds about how the run ended: nothing for the profile's own end (a capacity
    budget reached is one); an early stop or a load that fell short, named."""
    stop = meta.get("stop_reason")
    if not isinstance(stop, str):
        return " run.json records no end: the run did not finish (killed?)." if meta else ""
    early = meta.get("ended_early")
    if early is None:  # a run recorded before `ended_early`
        early = stop != "profile complete"
    if early:
        return f" The run ended early: {stop}."
    if meta.get("exit_code") in (LOAD_NOT_DELIVERED, DISK_ERROR):  # after the load: its record fell short
        return f" {stop[:1].upper()}{stop[1:]}."
    return ""


def _capacity_headline(run: RunData, profile: str) -> Headline:
    question = "Was the memory budget reached, and how many agents fit in it?"
    if not has_rows(run.capacity):
        return _unanswered(profile, question, "capacity.csv has no readings")
    r = run_capacity(run)
    budget = f"{r.budget_mib:,.0f} MiB" if r.budget_mib is not None else "the budget"
    if r.n_max is not None:
        why = f"{r.n_max} agents fit in {budget} at {r.marginal_mib:.2f} MiB each (R² {r.r2:.3f})"
    else:
        why = f"no capacity published (stop: {r.stop_reason}); see the notes under {CAPACITY}"
    answer = Answer(r.n_max is not None, why, default_rule(profile))
    figures = [
        Figure("N_max", r.n_max, "agents", CAPACITY),
        Figure("marginal memory", r.marginal_mib, "MiB/agent", CAPACITY),
        Figure("fit R²", r.r2, "", CAPACITY),
        Figure("first-agent increment", r.first_agent_mib, "MiB", CAPACITY),
        Figure("start-up p50", r.startup.get("p50"), "ms", CAPACITY),
        Figure("start-up p95", r.startup.get("p95"), "ms", CAPACITY),
        Figure("headroom at N_max", r.headroom_mib, "MiB", CAPACITY),
    ]
    return Headline.answered(profile, question, answer, figures)


def _churn_headline(run: RunData, profile: str) -> Headline:
    question = "Does closing a session give its memory back?"
    if not has_rows(run.capacity):
        return _unanswered(profile, question, "capacity.csv has no readings")
    c = run_churn(run)
    figures = [
        Figure("retained per closed session", c.retained_mib_per_session, "MiB", CHURN),
        Figure("fit R²", c.fit.r2 if c.fit else None, "", CHURN),
        Figure("sessions closed", c.sessions_closed, "sessions", CHURN),
        Figure("kept above the baseline, cycle by cycle", kept_text(c.kept_mib), "", CHURN),
    ]
    why = c.verdict + (f"; {c.suggestion}" if c.suggestion else "")
    held = (
        True if c.verdict.startswith("no retention") else False if c.verdict.startswith("retains") else None
    )
    return Headline.answered(profile, question, Answer(held, why, default_rule(profile)), figures)


def _rounds_headline(run: RunData, profile: str) -> Headline:
    question = "Did every round fit in memory with every task done?"
    table = rounds_table(run)
    if table is None:
        return _unanswered(profile, question, "no rounds with samples recorded")
    failed = table[~table["passed"].astype(bool)]
    if failed.empty:
        top = table.loc[table["concurrency"].idxmax()]
        why = f"all {len(table)} rounds passed, up to {_round_load(top)}"
    else:
        first = failed.iloc[0]
        why = f"round {failed.index[0]} ({_round_load(first)}) failed: {first['why']}"
    figures = [Figure(f"round {i}", _round_text(row), "", ROUNDS) for i, row in table.iterrows()]
    return Headline.answered(profile, question, Answer(failed.empty, why, default_rule(profile)), figures)


def _round_load(row: pd.Series) -> str:
    """ "N concurrent tasks" only where N ran at once; else what was submitted beside what ran."""
    submitted, ran = row["concurrency"], row["ran_at_once"]
    if pd.isna(ran):
        return f"{submitted:g} tasks submitted (how many ran at once was not measured)"
    if ran >= submitted:
        return f"{submitted:g} concurrent tasks"
    return f"{submitted:g} tasks submitted, at most {ran:g} ran at once {row['ran_at_once_from']}"


def _round_text(row: pd.Series) -> str:
    worker = "—" if pd.isna(row["worker_mib_mean"]) else f"{row['worker_mib_mean']:,.0f} MiB per worker"
    if not pd.isna(row["worker_mib_mean"]):
        counted = row["workers_counted"]
        worker += " (estimate)" if pd.isna(counted) else f" (n={counted:g})"
    return (
        f"{_round_load(row)}, peak {row['peak_target_rss_mib']:,.0f} MiB, min available "
        f"{row['min_available_mib']:,.0f} MiB, swap {row['peak_swap_mib']:,.0f} MiB, {worker}, "
        f"{row['succeeded']}/{row['items']} {row['of']} done: {'passed' if row['passed'] else 'FAILED'}"
    )


def _soak_headline(run: RunData, profile: str) -> Headline:
    memory, errors = soak_trends(run)
    question = "Did the gateway hold over time, without leaking memory or drifting into errors?"
    error_text = f"{errors.verdict}{_slope_text(errors)}" if errors.points else "no requests recorded"
    why = f"memory: {memory.verdict}{_slope_text(memory)}; errors: {error_text}"
    figures = [Figure("target RSS slope", memory.slope_per_h, "MiB/h", SOAK)]
    if errors.points:
        figures.append(Figure("error-rate drift", errors.slope_per_h, "percentage points/h", SOAK))
    held = _trend_held(memory), (_trend_held(errors) if errors.points else True)
    answer = False if False in held else None if None in held else True
    return Headline.answered(profile, question, Answer(answer, why, default_rule(profile)), figures)


def _trend_held(t: Trend) -> bool | None:
    """A soak verdict (analysis/soak.py's words) as held: "no evidence of ..." held, a leak or a drift did
    not; any other verdict ("not enough data", an inconclusive one) cannot say."""
    if t.verdict.startswith("no evidence"):
        return True
    return False if t.verdict in SOAK_FAILED else None


def _slope_text(t: Trend) -> str:
    if pd.isna(t.slope_per_h):
        return f" ({t.rule})"
    interval = f"{t.slope_low_per_h:,.1f} to {t.slope_high_per_h:,.1f}"
    return f" ({t.slope_per_h:,.1f} {t.unit}/h, 99 % interval {interval})"


def _breakpoint_headline(run: RunData, profile: str) -> Headline:
    """Where it broke, from the history in the run's own unit (not where it was stopped); the stop
    point only when the history shows no break (a threshold on memory, say)."""
    head = _load_headline(run, profile)
    head.question = "Did the gateway break under the rising load, and where?"
    levels = run_levels(run)
    broke = first_break(levels) if levels is not None else None
    stopped = _stop_point_text(run)
    if broke is not None:
        why = f"it broke at {broke.level:g} {broke.unit}: {broke.why}"
        why += f"; the run stopped when {stopped}" if stopped else ""
    elif stopped:
        point = run.meta["breakpoint"]
        why = f"it broke at {_stop_level(run, levels, point)}: {stopped}"
        head.figures.insert(0, Figure("breaking load", _stop_level(run, levels, point), "", THRESHOLDS))
    else:
        held = highest_held(levels) if levels is not None else None
        upto = f" up to {held:g} {levels.unit}" if held is not None and levels is not None else ""
        why = f"it did not break{upto}: no delivered level broke the rule, no aborting threshold failed"
    if (short := load_shortfall(run)) is not None:
        why += (
            f"; {short.level:g} {short.unit} was asked but not delivered ({short.why}), so it is not judged"
        )
    broken = broke is not None or stopped is not None
    head.verdict, head.held = Answer(broken, why, default_rule(profile)).text(), broken
    return head


def _stop_point_text(run: RunData) -> str | None:
    point = run.meta.get("breakpoint")
    if not (isinstance(point, dict) and point.get("threshold")):
        return None
    return f"{point['threshold']} failed {point.get('t_s', 0):.0f} s in"


def _stop_level(run: RunData, levels: Levels | None, point: dict) -> str:
    """The load at the stop in the run's unit: the asked arrival rate then (open model), else agents."""
    if levels is not None and levels.unit == ARRIVALS_PER_S and point.get("ts") is not None:
        rate = asked_rate(run.meta["open_model"], [point["ts"]])[0]
        return f"{rate:g} {ARRIVALS_PER_S}"
    return f"{point.get('running_users') or point.get('planned_users')} agents"


def _sweep_headline(run: RunData, profile: str) -> Headline:
    head = _load_headline(run, profile)
    head.question = "Did the gateway serve a delivered rate within its SLOs, and up to which?"
    found = sweep(run)
    if found is None:
        no_passes = Answer(
            None, "run.json has no sweep passes, or requests.csv no rows", default_rule(profile)
        )
        head.verdict, head.held = no_passes.text(), None
        return head
    best, head.held = best_text(found)
    head.verdict = Answer(head.held, f"{best}; {broke_text(found)}", default_rule(profile)).text()
    said_below = ("breaking level", "what broke there")
    head.figures = [f for f in head.figures if f.label not in said_below]
    head.figures[:0] = [
        Figure("highest delivered rate meeting the SLOs", found.best_rate, ARRIVALS_PER_S, SWEEP),
        Figure("breaking rate", found.broke.level if found.broke else "did not break", ARRIVALS_PER_S, SWEEP),
    ]
    return head


def _load_headline(run: RunData, profile: str) -> Headline:
    """smoke, average, stress, spike, manual: thresholds, p95 latency, TTFT and TPOT, goodput, errors,
    and where the history broke when it did."""
    question = (
        f"Did the gateway hold the {profile} load?"
        if profile != "unknown"
        else "Did the gateway hold the load?"
    )
    figures = _latency_figures(run) + _task_figures(run) + _goodput_figures(run)
    return Headline.answered(profile, question, load_answer(run, profile, run_validity(run)), figures)


def _task_figures(run: RunData) -> list[Figure]:
    """The tasks not done beside the failed requests: a task can end at max_steps, every request of it
    answered."""
    text = not_done_text(run)
    return [Figure("tasks not done", text, "", TASKS)] if text is not None else []


def _latency_figures(run: RunData) -> list[Figure]:
    table = latency_table(run)
    if table is None:
        return []
    main = main_operation(run, table)
    figures = [
        Figure("requests", int(table["requests"].sum()), "", LATENCY),
        Figure("failed requests", int(table["failed"].sum()), "", LATENCY),
        Figure(f"p95 latency of {main}", table.loc[main, "latency_p95"], "ms", LATENCY),
    ]
    for column, name in (("ttft_p95", "TTFT"), ("tpot_ms_p95", "TPOT")):
        if column in table and table[column].notna().any():
            op = table.loc[table[column].dropna().index, "requests"].idxmax()
            figures.append(Figure(f"p95 {name} of {op}", table.loc[op, column], "ms", LATENCY))
        elif name == "TPOT" and "ttft_p95" in table and table["ttft_p95"].notna().any():
            assert run.requests is not None  # a latency table was made of them
            figures.append(Figure("p95 TPOT", tpot_absent(run.requests), "", LATENCY))
    return figures + _peak_figures(run)


def _goodput_figures(run: RunData) -> list[Figure]:
    """Goodput with its counts, when the run has SLOs."""
    found = goodput(run)
    if found is None:
        return []
    figures = []
    for what, share in (("requests", found.requests), ("tasks", found.tasks)):
        if share.scored:  # a label that stays the same run after run: the history index trends it
            figures.append(Figure(f"goodput of {what}", (share.share or 0) * 100, "%", GOODPUT))
            figures.append(
                Figure(f"{what} that met every SLO", f"{share.met:,} of {share.scored:,}", "", GOODPUT)
            )
    return figures


def _peak_figures(run: RunData) -> list[Figure]:
    """Latency p95 and errors at the highest load level the run held (the load-levels table's last row),
    and the first level that broke the rule, in the run's own unit."""
    levels = run_levels(run)
    if levels is None or levels.table.empty:
        return []
    table = levels.table
    at = f"at peak ({table.index[-1]:g} {levels.unit})"
    figures = [
        Figure(f"latency p95 {at}", table["latency_p95_ms"].iloc[-1], "ms", LEVELS),
        Figure(f"errors {at}", table["error_pct"].iloc[-1], "%", LEVELS),
    ]
    broke = first_break(levels)
    if broke is not None:
        figures[:0] = [
            Figure("breaking level", broke.level, levels.unit, LEVELS),
            Figure("what broke there", broke.why, "", LEVELS),
        ]
    return figures


def _threshold_figures(run: RunData) -> list[Figure]:
    """Each failed threshold as a figure: the rule and the value that broke it."""
    state = {True: "passed", False: "FAILED", None: "not judged"}
    return [
        Figure(f"threshold {t.get('expr')}", f"{state.get(t.get('passed'), 'not judged')}", "", THRESHOLDS)
        for t in thresholds(run)
    ]


def cost_figures(run: RunData) -> list[Figure]:
    """LLM dollars at list price, as billed (the gateway's own bill wherever it reported one, the price
    table's figure beside it), at the cache floor, $ per task; a figure resting on a fictional price
    table entry says so."""
    source = cost.usage_rows(run)[1]
    table = cost.run_prices(run)
    if source == "none" or isinstance(table, prices.PriceTableError):
        return []
    priced = cost.priced_usage(run, table)[0]
    total = cost.cost_by_model(priced).loc["total"]
    billed = cost.dollar_total(priced)
    fictional = cost.fictional_models(priced["model"], table)
    made_up = f"FICTIONAL price table entry: {', '.join(fictional)}" if fictional else ""
    per_task = cost.per_task_summary(cost.task_costs(run, table))
    figures = [
        Figure("LLM cost at list price", total["usd_list"], "$", COST, made_up),
        Figure("LLM cost as billed", total["usd_billed"], "$", COST, _billed_note(billed, made_up)),
        Figure("LLM cost at the cache floor", total["usd_floor"], "$", COST, made_up),
        Figure(
            "LLM cost per task, as billed (mean)",
            per_task.loc["as billed", "usd_mean"],
            "$",
            COST,
            _billed_note(billed, made_up),
        ),
    ]
    if billed.gateway_calls and billed.table_calls:  # the table's figure beside the gateway's
        at_table = Figure("LLM cost at the price table's rates", total["usd_table"], "$", COST, made_up)
        figures.insert(2, at_table)
    return [f for f in figures if not pd.isna(f.value)]


def _billed_note(total: cost.DollarTotal, made_up: str) -> str:
    if total.gateway_calls == total.calls:
        return "the gateway's own cost"
    if total.gateway_calls:
        return (
            f"the gateway's own cost for {total.gateway_calls} of {total.calls} calls, the table's rates else"
        )
    return made_up


def _fit_headline(run: RunData, profile: str) -> Headline:
    """Did working agents fit, how many, at how many each limit binds, and which binds first."""
    question = "Did working agents fit on this box, and which limit binds first?"
    answer = fit_answer(run)
    if answer is None:
        return _unanswered(profile, question, "run.json records no scored step")
    figures = [
        Figure("working agents that fit", answer.fits_agents, "agents", FIT),
        Figure("binding limit", answer.binding or "none", "", FIT),
        Figure("memory per working agent", answer.mib_per_agent, "MiB", FIT),
        Figure("memory fit R²", answer.memory_fit.r2 if answer.memory_fit else None, "", FIT),
        Figure("first agent's cost", answer.first_agent_mib, "MiB", FIT),
    ]
    figures += [Figure(f"agents by {lim.name}", lim.agents, "", FIT, lim.how) for lim in answer.limits]
    # no limit bound and no cap reached (the run was stopped first): the question is not answered
    held = None if answer.binding is None else bool(answer.fits_agents)
    verdict = Answer(held, answer.sentence().rstrip("."), default_rule(profile))
    return Headline.answered(profile, question, verdict, figures)


BUILDERS: dict[str, Callable[[RunData, str], Headline]] = {
    "capacity": _capacity_headline,
    "churn": _churn_headline,
    "rounds": _rounds_headline,
    "soak": _soak_headline,
    "breakpoint": _breakpoint_headline,
    "sweep": _sweep_headline,
    "fit": _fit_headline,
}
