"""Assemble the report of one run: sections of tables and notes, plots, then report.md and report.html
written into the run directory. The only module that both computes (via the table functions) and writes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd

from analysis import cost, plots, prices, render
from analysis.capacity import capacity_result, capacity_section
from analysis.capacity_plot import capacity_plot
from analysis.drift import drift_section
from analysis.errors import error_table
from analysis.knee import knees, little_check, load_levels, time_bins
from analysis.latency import latency_table
from analysis.load import load_run
from analysis.model import RunData, Section
from analysis.queue import queue_table
from analysis.remote_samplers import remote_samplers_section
from analysis.resources import DEFAULT_WARNING_BYTES, resource_table, unmeasured_series
from analysis.rounds import rounds_table
from analysis.rss_by_n import rss_by_agent_count
from analysis.soak import error_rate_trend, memory_trend, soak_table
from analysis.stats import MIN_SAMPLES
from analysis.summary import record_gaps, run_summary_table, thresholds_table
from analysis.tasks import task_outcome_table, task_timing_table
from contract.schema import MIB, REPORT_HTML, REPORT_MD


def capacity_report_section(run: RunData) -> Section | None:
    """Capacity (or churn) tables, with the RSS-vs-N plot and its fitted tail for a capacity run."""
    frame = run.capacity
    if frame is None or frame.empty or "event" not in frame:
        return None
    plot = None
    if not frame["event"].isin(["opened", "closed"]).any():
        plot = capacity_plot({run.path.name: (capacity_result(frame), frame)}, run.path / "capacity.png")
    return capacity_section(run, plot=plot)


def cost_report_section(run: RunData) -> Section | None:
    """Cost at the run's price table (--prices, recorded in run.json; else the shipped one) and host
    price; a rejected price file still shows tokens and names the error."""
    settings = run.meta.get("cost") or {}
    table: prices.PriceTable | prices.PriceTableError
    try:
        table = prices.load_prices(settings.get("prices") or prices.DEFAULT_PRICES_PATH)
    except prices.PriceTableError as exc:
        table = exc
    return cost.cost_section(run, table, host_price_month=settings.get("host_price_month"))


# REGISTRY of sections other modules contribute, each a function RunData -> Section | None. The lead
# extends this list; a function that raises becomes a one-line note in the report, never a lost report.
EXTRA_SECTIONS: list[Callable[[RunData], Section | None]] = [
    capacity_report_section,
    cost_report_section,
    drift_section,
    remote_samplers_section,
]

PERCENTILE_RULE = (
    "percentiles need roughly "
    + ", ".join(f"p{p}: {n}" for p, n in MIN_SAMPLES.items())
    + " samples; thinner ones are flagged in small_sample"
)


def _section(
    title: str, tables: list[tuple[str, pd.DataFrame | None]], absent: str, notes: list[str] | None = None
) -> Section:
    """A section with the tables that exist; when none does, a note says why instead of zeros."""
    present = [(caption, df) for caption, df in tables if df is not None]
    sec = Section(title, present, list(notes or []))
    if not present:
        sec.notes.append(f"not available: {absent}")
    return sec


def build_sections(
    run: RunData,
    bins: pd.DataFrame | None,
    levels: pd.DataFrame | None,
    warning_bytes: float = DEFAULT_WARNING_BYTES,
) -> list[Section]:
    """Every section of the report, tables and notes only (plots are attached by write_report)."""
    no_req, no_samples = "no requests recorded", "no samples recorded"
    summary = Section(
        "Run summary",
        [("run", run_summary_table(run))],
        [f"missing or damaged: {m}" for m in run.missing + record_gaps(run)],
    )
    if (th := thresholds_table(run.meta)) is not None:
        summary.tables.append(("thresholds", th))
    unmeasured = unmeasured_series(run)
    return [
        summary,
        _section(
            "Latency per operation (ms, successful requests)",
            [("latency", latency_table(run))],
            no_req,
            [PERCENTILE_RULE],
        ),
        _section(
            "Tasks",
            [("timing (ms)", task_timing_table(run)), ("outcomes", task_outcome_table(run))],
            "no tasks recorded",
            [PERCENTILE_RULE],
        ),
        _section("Errors", [("failed requests by kind", error_table(run))], no_req),
        _section("Queue", [("queue", queue_table(run))], "queue length and in-progress not measured"),
        _section(
            "Resources",
            [("resources", resource_table(run, warning_bytes))],
            no_samples,
            [f"warning line: {warning_bytes / MIB:.0f} MiB available"]
            + ([f"not measured: {', '.join(unmeasured)}"] if unmeasured else []),
        ),
        _section("Rounds", [("rounds", rounds_table(run, warning_bytes))], "no rounds in this run"),
        soak_section(run),
        load_section(run, levels),
    ] + extra_sections(run)


def soak_section(run: RunData) -> Section:
    """Memory-leak and error-drift verdicts with the rules that produced them."""
    trends = [memory_trend(run), error_rate_trend(run)]
    return Section(
        "Soak verdict",
        [("trends (slopes per hour)", soak_table(trends))],
        [f"{t.measure}: {t.verdict} — rule: {t.rule}" for t in trends],
    )


def load_section(run: RunData, levels: pd.DataFrame | None) -> Section:
    """Latency/errors per load level, the knees, and the Little's-law check."""
    if levels is None or levels.empty:
        return _section("Load levels and knee", [], "no requests with active users recorded")
    check = little_check(levels, run.samples)
    notes = [
        f"{k.measure} knee: "
        + (f"at {k.users:g} users ({k.value:,.1f})" if k.users is not None else "none")
        + f" — {k.rule}"
        for k in knees(levels)
    ]
    notes.append(
        f"load generator {'SATURATED: numbers not trustworthy' if check.saturated else 'kept up'}"
        f" — in-flight / (throughput x latency) = {check.in_flight_vs_little:.2f}; "
        f"in-flight per user {check.busy_ratio_low:.2f} -> {check.busy_ratio_high:.2f}; "
        f"load-generator CPU p90 {render.fmt(check.loadgen_cpu_p90)} %; rule: {check.rule}"
    )
    return Section("Load levels and knee", [("per active-users level", levels)], notes)


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


def write_report(run_dir: str | Path, warning_bytes: float = DEFAULT_WARNING_BYTES) -> Path:
    """(Re)build report.md, report.html and the PNGs in the run directory; returns report.html's path."""
    run = load_run(run_dir)
    bins = time_bins(run)
    levels = load_levels(bins) if bins is not None else None
    sections = build_sections(run, bins, levels, warning_bytes)
    _attach_plots(run, bins, levels, sections, warning_bytes)
    title = f"Run report: {run.meta.get('run_id', run.path.name)}"
    (run.path / REPORT_MD).write_text(render.markdown(title, sections))
    out = run.path / REPORT_HTML
    out.write_text(render.page(title, sections))
    return out


def _attach_plots(
    run: RunData,
    bins: pd.DataFrame | None,
    levels: pd.DataFrame | None,
    sections: list[Section],
    warning_bytes: float,
) -> None:
    by_title = {s.title: s for s in sections}
    images = {
        "Resources": [
            plots.timeline_plot(run, bins, run.path / "timeline.png", warning_bytes),
            plots.rss_vs_agents_plot(rss_by_agent_count(run), run.path / "rss_vs_agents.png"),
        ],
        "Load levels and knee": [plots.latency_vs_users_plot(levels, run.path / "latency_vs_users.png")],
    }
    for title, paths in images.items():
        by_title[title].images += [p for p in paths if p is not None]
