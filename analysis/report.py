"""Assemble the report of one run: sections of tables and notes, plots, then report.md and report.html
written into the run directory. The only module that both computes (via the table functions) and writes.
The tables never depend on the plots: matplotlib is imported only to draw, and a plot that cannot be drawn
is a note in its section naming the rebuild command, never a lost report.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from analysis import agent_loop, cost, labels, mcp, render
from analysis import headline as headline_mod
from analysis.arrivals import LATE_RULE, arrivals, arrivals_table, lateness_table
from analysis.breaking import RULE, first_break
from analysis.capacity import capacity_section, run_capacity, run_churn, sampler_peak_note
from analysis.capacity_rows import has_rows
from analysis.delivery import RULE as DELIVERY_RULE
from analysis.drift import drift_section
from analysis.errors import error_table
from analysis.goodput import goodput
from analysis.hosts import hosts_note
from analysis.knee import SATURATION_REMEDY, knees, little_check, load_levels, time_bins
from analysis.latency import latency_table, tpot_notes
from analysis.levels import load_shortfall, run_levels
from analysis.load import load_run
from analysis.model import RunData, Section
from analysis.model_calls import model_calls_section
from analysis.queue import queue_notes, queue_table
from analysis.remote_samplers import remote_samplers_section
from analysis.resources import DEFAULT_WARNING_BYTES, resource_table, target_unread_line, unmeasured_series
from analysis.rounds import rounds_table, worker_notes
from analysis.rss_by_n import rss_by_agent_count
from analysis.sessions import sessions_section
from analysis.soak import data_rule, soak_table, soak_trends
from analysis.stats import MIN_SAMPLES
from analysis.summary import record_gaps, run_summary_table, thresholds_table
from analysis.summary_json import write_summary_json
from analysis.sweep import sweep, sweep_answer
from analysis.tasks import task_outcome_table, task_timing_table
from analysis.validity import SATURATION_RULE, run_validity
from analysis.validity import SECTION as LOADGEN
from analysis.working_fit import FIT, fit_answer
from analysis.working_fit_section import fit_section
from analysis.workload import TITLE as WORKLOAD
from analysis.workload import workload_section
from contract.schema import MIB, REPORT_HTML, REPORT_MD


def capacity_report_section(run: RunData) -> Section | None:
    """Capacity (or churn) tables; the RSS-vs-N plot is attached by write_report."""
    if not has_rows(run.capacity):
        return None
    section = capacity_section(run)
    if section is not None:  # the measures' column is named after the run directory: say "this run"
        section.tables = [(c, t.rename(columns={run.path.name: "this run"})) for c, t in section.tables]
    return section


def cost_report_section(run: RunData) -> Section | None:
    """Cost at the run's price table (--prices, recorded in run.json; else the shipped one) and host
    price; a rejected price file still shows tokens and names the error."""
    recorded = run.meta.get("cost")
    settings = recorded if isinstance(recorded, dict) else {}
    host_price = settings.get("host_price_month")
    host_price = host_price if isinstance(host_price, int | float) else None
    return cost.cost_section(run, cost.run_prices(run), host_price_month=host_price)


def loop_report_section(run: RunData) -> Section | None:
    """The agent loop's section, dollars at the run's price table."""
    return agent_loop.loop_section(run, cost.run_prices(run))


# REGISTRY of sections other modules contribute, each a function RunData -> Section | None: a new report
# section is one entry here; a function that raises becomes a one-line note in the report, never a lost one.
EXTRA_SECTIONS: list[Callable[[RunData], Section | None]] = [
    capacity_report_section,
    cost_report_section,
    loop_report_section,
    model_calls_section,
    mcp.mcp_section,
    drift_section,
    remote_samplers_section,
    sessions_section,
    fit_section,
]

PERCENTILE_RULE = (
    "percentiles need roughly "
    + ", ".join(f"p{p}: {n}" for p, n in MIN_SAMPLES.items())
    + " samples; thinner ones are listed under their table"
)

# The sections each profile is about come first, right under the headline; the rest keep this order.
LEADS: dict[str, tuple[str, ...]] = {
    "capacity": (headline_mod.CAPACITY,),
    "churn": (headline_mod.CHURN,),
    "rounds": (headline_mod.ROUNDS, "Resources"),
    "soak": (headline_mod.SOAK, "Resources"),
    "breakpoint": (headline_mod.LEVELS, headline_mod.LATENCY),
    "sweep": (headline_mod.SWEEP, headline_mod.GOODPUT, headline_mod.LATENCY),
    "trace": (WORKLOAD, headline_mod.ARRIVALS),  # what the trace sent, and whether it kept its timing
    "fit": (FIT, "Resources"),
}


def _section(
    title: str, tables: list[tuple[str, pd.DataFrame | None]], notes: list[str] | None = None
) -> Section | None:
    """A section with the tables that have rows; None (left out of the report) when none has."""
    present = [(caption, df) for caption, df in tables if df is not None and not df.empty]
    return Section(title, present, list(notes or [])) if present else None


def build_sections(
    run: RunData,
    bins: pd.DataFrame | None,
    levels: pd.DataFrame | None,
    warning_bytes: float = DEFAULT_WARNING_BYTES,
) -> list[Section]:
    """The headline, then every section that has data (profile's own first), then one line naming what
    was not measured. Tables and notes only: plots are attached by write_report."""
    candidates: dict[str, Section | None] = {
        WORKLOAD: workload_section(run, cost.run_prices(run)),  # what load it was, first
        headline_mod.LATENCY: _section(
            headline_mod.LATENCY + " (ms, successful requests)",
            [("latency", latency_table(run))],
            [PERCENTILE_RULE, *tpot_notes(run), *filter(None, [run_validity(run).line()])],
        ),
        "Tasks": _section(
            "Tasks",
            [("timing (ms)", task_timing_table(run)), ("outcomes", task_outcome_table(run))],
            [PERCENTILE_RULE],
        ),
        "Errors": _section("Errors", [("failed requests by kind", error_table(run))]),
        "Queue": _section("Queue", [("queue", queue_table(run))], queue_notes(run)),
        "Resources": _section(
            "Resources",
            [("resources", resource_table(run, warning_bytes))],
            [
                f"warning line: {warning_bytes / MIB:.0f} MiB available",
                *filter(None, [target_unread_line(run), hosts_note(run), sampler_peak_note(run)]),
            ],
        ),
        headline_mod.ROUNDS: _section(
            headline_mod.ROUNDS, [("rounds", rounds_table(run, warning_bytes))], worker_notes(run)
        ),
        headline_mod.SOAK: soak_section(run),
        headline_mod.SWEEP: sweep_section(run),
        headline_mod.GOODPUT: goodput_section(run),
        headline_mod.ARRIVALS: arrivals_section(run),
        "Load levels and knee": load_section(run, levels),
        LOADGEN: loadgen_section(run),
    }
    candidates.update({s.title: s for s in extra_sections(run)})
    lead = LEADS.get(headline_mod.profile_of(run), ())
    order = [t for t in lead if t in candidates] + [t for t in candidates if t not in lead]
    present = [s for s in (candidates[t] for t in order) if s is not None]
    return [head_section(run), summary_section(run), *present, *absent_section(run, candidates)]


def head_section(run: RunData) -> Section:
    """The headline: question and verdict as the first note, figures as a table naming their source."""
    head = headline_mod.headline(run)
    rows = [(f.label, f.text().split(": ", 1)[1], f.source) for f in head.figures]
    table = pd.DataFrame(rows, columns=["figure", "value", "from table"]).set_index("figure")
    return Section("Headline", [("figures", table)] if rows else [], [f"{head.question} {head.verdict}"])


def summary_section(run: RunData) -> Section:
    summary = Section(
        "Run summary",
        [("run", run_summary_table(run))],
        [f"missing or damaged: {m}" for m in run.missing + record_gaps(run)],
    )
    if (th := thresholds_table(run.meta)) is not None:
        summary.tables.append(("thresholds", th))
    return summary


# What each left-out section would have measured, in words.
ABSENT_WORDS = {
    WORKLOAD: "what agents sent (no requests)",
    headline_mod.LATENCY: "request latency",
    "Tasks": "tasks",
    "Errors": "failed requests (none failed)",
    "Queue": "the gateway's queue",
    "Resources": "target and host resources",
    headline_mod.ROUNDS: "rounds",
    headline_mod.SOAK: "trends over time",
    "Load levels and knee": "latency per load level",
    headline_mod.GOODPUT: "goodput (no --slo given)",
}


def absent_section(run: RunData, candidates: dict[str, Section | None]) -> list[Section]:
    """One line listing, in words, what this run did not measure (sections and sampler series)."""
    words = [ABSENT_WORDS[t] for t, sec in candidates.items() if sec is None and t in ABSENT_WORDS]
    unmeasured = unmeasured_series(run)
    if unmeasured:
        words.append(labels.labels(unmeasured))
    return [Section("Not measured", notes=["; ".join(words)])] if words else []


def soak_section(run: RunData) -> Section | None:
    """Memory-leak and error-drift verdicts with the rules that produced them; left out of a run that is
    no soak and too short for either verdict."""
    trends = list(soak_trends(run))
    judged = any(t.verdict != "not enough data" for t in trends)
    if not judged and headline_mod.profile_of(run) != "soak":
        return None
    return Section(
        headline_mod.SOAK,
        [("trends (slopes per hour)", soak_table(trends))],
        [data_rule(run.meta), *(f"{t.measure}: {t.verdict} — rule: {t.rule}" for t in trends)],
    )


def load_section(run: RunData, legacy: pd.DataFrame | None) -> Section | None:
    """Latency, errors and goodput per load level in the run's own unit, the knees, the breaking level
    with its rule, and the Little's-law check (on the agents active per time bin, `legacy`)."""
    levels = run_levels(run)
    if levels is None or levels.table.empty:
        return None
    notes = [f"levels: {levels.source}"]
    notes += [
        f"{k.measure} knee: "
        + (f"at {k.users:g} {levels.unit} ({k.value:,.1f})" if k.users is not None else "none")
        + f" — {k.rule}"
        for k in knees(levels.table)
    ]
    broke = first_break(levels)
    where = f"at {broke.level:g} {levels.unit} ({broke.why})" if broke else "none"
    notes.append(f"breaking level: {where} — rule: {RULE}")
    notes.append(f"delivery: {DELIVERY_RULE}; held and broken levels are read among the delivered only")
    if (short := load_shortfall(run)) is not None:
        notes.append(f"LOAD NOT DELIVERED {short.text()}")
    if legacy is not None and not legacy.empty:
        check = little_check(legacy)
        kept_up = (
            f"SATURATED: users not kept busy ({SATURATION_REMEDY})" if check.saturated else "kept users busy"
        )
        notes.append(
            f"load generator {kept_up}"
            f" — in-flight / (throughput x latency) = {check.in_flight_vs_little:.2f}; "
            f"in-flight per user {check.busy_ratio_low:.2f} -> {check.busy_ratio_high:.2f}; "
            f"rule: {check.rule}"
        )
    return Section(headline_mod.LEVELS, [(f"per level ({levels.unit})", levels.table)], notes)


def loadgen_section(run: RunData) -> Section:
    """The load generator's situation, each rule with what the run read (analysis/validity.py): the
    same verdict as run.json's, the console's and summary.json's."""
    validity = run_validity(run)
    rows = [
        {
            "check": c.name,
            "value": c.value,
            "unit": c.unit,
            "limit": c.limit,
            "n": c.n,
            "verdict": {True: "ok", False: "FAILED", None: "not judged"}[c.passed],
        }
        for c in validity.checks
    ]
    verdict = validity.line() or "latency figures not suspect: every judged rule held"
    advice = [f"advice: {a}" for a in [validity.advice()] if a]
    notes = [verdict, *advice, *(f"{c.name}: {c.rule}" for c in validity.checks)]
    if validity.valid is False:
        notes.insert(0, f"RUN INVALID (exit code 4): {SATURATION_RULE} ({SATURATION_REMEDY})")
    return Section(LOADGEN, [("rules", pd.DataFrame(rows).set_index("check"))], notes)


def sweep_section(run: RunData) -> Section | None:
    """The sweep's passes, with its answer on top."""
    found = sweep(run)
    if found is None:
        return None
    return Section(
        headline_mod.SWEEP,
        [("passes", found.table)],
        [sweep_answer(found), f"a rate breaks by the rule: {RULE}; {PERCENTILE_RULE}"],
    )


def goodput_section(run: RunData) -> Section | None:
    """Goodput of requests and tasks with counts, and each SLO's attainment."""
    found = goodput(run)
    if found is None:
        return None
    rows = [
        {
            "of": what,
            "judged": share.scored,
            "met": share.met,
            "share_pct": _pct(share.share),
            "per_s": share.per_s,
        }
        for what, share in (("requests", found.requests), ("tasks", found.tasks))
        if share.scored
    ]
    table = pd.DataFrame(rows).set_index("of") if rows else None
    notes = [
        "goodput: the share of requests (tasks) that met every SLO; scored are the requests of the "
        "operations that measure every SLO's metric, a failed one counting as a miss; a task meets its "
        "SLOs when it is done, within every task SLO, and none of its requests missed one"
    ]
    return _section(headline_mod.GOODPUT, [("goodput", table), ("per SLO", found.attainment)], notes)


def arrivals_section(run: RunData) -> Section | None:
    """The open model's arrivals: started, late and dropped, start lateness, thresholds on drops."""
    found = arrivals(run)
    if found is None:
        return None
    notes = [f"arrival process: {found.process}", LATE_RULE]
    notes += [
        f"threshold {t.get('expr')}: "
        + {True: "passed", False: "FAILED", None: "not judged"}[t.get("passed")]
        + f" (value {t.get('value')})"
        for t in run.meta.get("thresholds") or []
        if str(t.get("expr", "")).startswith("dropped_arrivals")
    ]
    return Section(
        headline_mod.ARRIVALS,
        [("arrivals", arrivals_table(found)), ("start lateness", lateness_table(found))],
        notes,
    )


def _pct(share: float | None) -> float | None:
    return None if share is None else share * 100


def extra_sections(
    run: RunData, registry: list[Callable[[RunData], Section | None]] | None = None
) -> list[Section]:
    """Sections from the registry; a failure becomes a one-line note naming the function."""
    out = []
    for func in EXTRA_SECTIONS if registry is None else registry:
        try:
            section = func(run)
        except Exception as exc:  # one broken section must not cost the whole report
            name = getattr(func, "__name__", str(func)).strip("_").replace("_", " ")
            section = Section(name, notes=[f"failed: {exc.__class__.__name__}: {exc}"])
        if section is not None:
            out.append(section)
    return out


def write_report(
    run_dir: str | Path | RunData,
    warning_bytes: float = DEFAULT_WARNING_BYTES,
    out_dir: str | Path | None = None,
) -> Path:
    """(Re)build report.md, report.html and the PNGs, in the run directory or `out_dir`; returns
    report.html's path. Takes a run directory or a run already loaded (read once, not twice)."""
    run = run_dir if isinstance(run_dir, RunData) else load_run(run_dir)
    out = Path(out_dir) if out_dir is not None else run.path
    out.mkdir(parents=True, exist_ok=True)
    bins = time_bins(run)
    levels = load_levels(bins) if bins is not None else None
    sections = build_sections(run, bins, levels, warning_bytes)
    _attach_plots(run, bins, levels, sections, warning_bytes, out)
    title = f"Run report: {run.meta.get('run_id', run.path.name)}"
    (out / REPORT_MD).write_text(render.markdown(title, sections))
    (out / REPORT_HTML).write_text(render.page(title, sections))
    write_summary_json(run, out)
    return out / REPORT_HTML


def rebuild_command(run: RunData) -> str:
    return f"python -m analysis {run.path}"


def _attach_plots(
    run: RunData,
    bins: pd.DataFrame | None,
    levels: pd.DataFrame | None,
    sections: list[Section],
    warning_bytes: float,
    out: Path,
) -> None:
    """Draw each plot whose section is in the report, into `out`; one that fails (matplotlib missing or
    broken, a bad value) is a note in its section and one line on stderr."""
    by_title = {s.title: s for s in sections}
    try:
        drawers = _drawers(run, bins, levels, warning_bytes, out)
    except Exception as exc:  # importing matplotlib failed: the tables still stand
        drawers = {}
        _plot_failed(run, "plots", exc, [s for s in sections if s.title in PLOTTED])
    for title, draws in drawers.items():
        if title not in by_title:
            continue
        for name, draw in draws:
            try:
                image = draw()
            except OSError:
                raise  # the directory cannot be written: the report's own write would fail the same way
            except Exception as exc:  # one plot must not cost the report
                _plot_failed(run, name, exc, [by_title[title]])
            else:
                by_title[title].images += [image] if image is not None else []


# Sections that carry plots (a failure to import matplotlib is noted in each of them).
PLOTTED = (
    "Resources",
    "Load levels and knee",
    headline_mod.ROUNDS,
    headline_mod.CAPACITY,
    headline_mod.CHURN,
    FIT,
    headline_mod.SOAK,
)


def _drawers(
    run: RunData, bins, levels, warning_bytes: float, out: Path
) -> dict[str, list[tuple[str, Callable]]]:
    """(plot file, drawing function) per section title; imports matplotlib (only drawing needs it)."""
    from analysis import plots
    from analysis.capacity_plot import capacity_plot, churn_plot
    from analysis.soak_plot import soak_plot
    from analysis.working_fit_plot import fit_plot

    frame = run.capacity
    return {
        "Resources": [
            ("timeline.png", lambda: plots.timeline_plot(run, bins, out / "timeline.png", warning_bytes)),
            (
                "rss_vs_agents.png",
                lambda: plots.rss_vs_agents_plot(rss_by_agent_count(run), out / "rss_vs_agents.png"),
            ),
        ],
        "Load levels and knee": [
            ("latency_vs_users.png", lambda: plots.latency_vs_level_plot(run_levels(run), out, run.meta))
        ],
        headline_mod.ROUNDS: [
            (
                "rounds.png",
                lambda: plots.rounds_plot(
                    rounds_table(run, warning_bytes), out / "rounds.png", warning_bytes
                ),
            )
        ],
        headline_mod.CAPACITY: [
            (
                "capacity.png",
                lambda: capacity_plot({"": (run_capacity(run), frame)}, out / "capacity.png"),
            )
        ],
        headline_mod.CHURN: [("churn.png", lambda: churn_plot(run_churn(run), frame, out / "churn.png"))],
        FIT: [("fit.png", lambda: fit_plot(fit_answer(run), out / "fit.png"))],
        headline_mod.SOAK: [("soak.png", lambda: soak_plot(run, out))],
    }


def _plot_failed(run: RunData, name: str, exc: Exception, sections: list[Section]) -> None:
    why = f"{name} not drawn: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    for section in sections:
        section.notes.append(f"{why} (rebuild: {rebuild_command(run)})")
    sys.stderr.write(f"loadkit: {why}; the tables are written (rebuild: {rebuild_command(run)})\n")
