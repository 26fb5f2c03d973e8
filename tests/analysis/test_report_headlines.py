"""Per profile, on a recorded run directory: the headline names the right verdict with figures equal to
the tables they come from, no table header or plot legend is a raw column name, and sections without
data are left out (named in one "Not measured" line)."""

from __future__ import annotations

import re

import matplotlib.figure
import pytest

from analysis import render
from analysis.capacity import capacity_result
from analysis.churn import churn_result
from analysis.headline import headline
from analysis.knee import load_levels, time_bins
from analysis.labels import LABELS
from analysis.latency import latency_table
from analysis.load import load_run
from analysis.report import write_report
from analysis.rounds import rounds_table
from analysis.soak import soak_trends
from contract import schema
from tests.report_runs import LOAD_PROFILES, PROFILES, recorded_run

RAW = (
    set(LABELS)
    | {c for cols in (*schema.FILES_COLUMNS.values(), schema.CAPACITY_COLUMNS) for c in cols}
    | {"latency_p95", "ttft_p95", "latency_small_sample", "small_sample", "itl_ms_mean"}
)
RAW -= {"operation", "requests", "failed", "count", "status", "tasks", "series", "readings", "round"}
RAW -= {"items", "succeeded", "passed", "why", "measure", "unit", "points", "verdict", "bins", "basis"}
RAW -= {"item", "value", "low", "high", "model", "calls", "users", "abort", "samples", "example", "of"}
TERMS = ("N_max", "N_stop")  # The capacity study's names, defined in the capacity notes


def is_raw(text: str) -> bool:
    """A column name, or words with an underscore left in them (the capacity study's terms aside)."""
    words = text
    for term in TERMS:
        words = words.replace(term, "")
    return text in RAW or "_" in words


def headers(md: str) -> list[str]:
    """Header cells of every Markdown table, and the row names of tables turned on their side."""
    lines = md.splitlines()
    cells = []
    for i, line in enumerate(lines[:-1]):
        if line.startswith("| ") and lines[i + 1].startswith("|---"):
            head = [c.strip() for c in line.strip("|").split(" | ")]
            cells += head
            if head[0] == "measure":
                rows = [row for row in lines[i + 2 :] if row.startswith("| ")]
                cells += [row.strip("|").split(" | ")[0].strip() for row in rows[: len(rows)]]
    return cells


@pytest.fixture
def legends(monkeypatch) -> list[str]:
    """Every legend entry and axis label of every figure the report saves."""
    seen: list[str] = []
    original = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        for ax in fig.axes:
            seen.extend([ax.get_xlabel(), ax.get_ylabel()])
            if ax.get_legend():
                seen.extend(t.get_text() for t in ax.get_legend().get_texts())
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    return seen


def report(tmp_path, profile: str) -> tuple[object, str]:
    path = recorded_run(tmp_path / profile, profile)
    write_report(path)
    return load_run(path), (path / "report.md").read_text()


@pytest.mark.parametrize("profile", PROFILES)
def test_no_header_or_legend_is_a_raw_column_name(tmp_path, legends, profile):
    _, md = report(tmp_path, profile)
    raw = [c for c in headers(md) if is_raw(c)]
    assert not raw, raw
    assert legends and not [t for t in legends if is_raw(t)], legends
    assert md.index("## Headline") < md.index("## Run summary")


def section_titles(md: str) -> list[str]:
    return re.findall(r"^## (.+)$", md, re.M)


@pytest.mark.parametrize("profile", LOAD_PROFILES)
def test_load_profiles_lead_with_thresholds_latency_and_ttft(tmp_path, profile):
    run, md = report(tmp_path, profile)
    head = headline(run)
    assert head.verdict == (
        "No: 1 of 2 thresholds failed, first error_rate < 0.001 "
        "(rule: your thresholds, load delivered, run valid)."
    )
    assert head.held is False
    table = latency_table(run)
    figures = {f.label: f for f in head.figures}
    assert figures["p95 latency of chat.stream"].value == table.loc["chat.stream", "latency_p95"]
    assert figures["p95 TTFT of chat.stream"].value == table.loc["chat.stream", "ttft_p95"]
    assert figures["failed requests"].value == table["failed"].sum()
    levels = load_levels(time_bins(run))
    peak = f"latency p95 at peak ({levels.index[-1]:g} agents)"
    assert (
        figures[peak].value == levels["latency_p95_ms"].iloc[-1]
        and figures[peak].source == "Load levels and knee"
    )
    assert all(
        f.source in section_titles(md) or f.source + " (ms, successful requests)" in section_titles(md)
        for f in head.figures
    )
    assert f"| latency p95 (ms) | {render.fmt(table.loc['chat.stream', 'latency_p95'])} |" in md
    assert figures["LLM cost as billed"].value > 0  # sim-model is priced in prices.toml
    assert "## Tasks" not in md and "## Rounds" not in md and "## Capacity" not in md
    assert "tasks; rounds" in md.split("## Not measured")[1]


def test_breakpoint_names_the_level_where_it_broke(tmp_path):
    run, md = report(tmp_path, "breakpoint")
    head = headline(run)
    assert head.verdict.startswith("Yes: it broke at 12 agents: ttft_ms p95 < 500 failed 62 s in (rule: ")
    assert section_titles(md)[2] == "Load levels and knee"


@pytest.mark.parametrize(("leak", "verdict"), [(120.0, "leak"), (0.0, "no evidence of leak")])
def test_soak_names_the_leak_verdict_with_the_slope_of_its_table(tmp_path, leak, verdict):
    path = recorded_run(tmp_path / "soak", "soak", leak_mib_per_h=leak)
    write_report(path)
    run, md = load_run(path), (path / "report.md").read_text()
    memory, _ = soak_trends(run)
    head = headline(run)
    word = "No" if leak else "Yes"
    assert head.verdict.startswith(f"{word}: memory: {verdict} (")
    assert head.figures[0].value == memory.slope_per_h
    if leak:
        assert memory.slope_per_h == pytest.approx(leak, rel=0.1)
    assert section_titles(md)[2] == "Soak verdict"
    row = next(line for line in md.splitlines() if line.startswith("| slope per hour |"))
    assert render.fmt(memory.slope_per_h) in row
    assert "## Latency" not in md and "## Errors" not in md and "request latency" in md


def test_capacity_headline_is_n_max_with_its_fit(tmp_path):
    run, md = report(tmp_path, "capacity")
    r = capacity_result(run.capacity)
    head = headline(run)
    assert head.verdict.startswith("Yes: 223 agents fit in 1,024 MiB at 4.00 MiB each (R² 1.000) (rule: ")
    assert {f.label: f.value for f in head.figures}["N_max"] == r.n_max == 223
    assert section_titles(md)[2] == "Capacity"
    assert "| N_max | 223 |" in md
    assert "## Resources" not in md and "## Latency" not in md


def test_churn_headline_is_mib_retained_per_closed_session(tmp_path):
    run, md = report(tmp_path, "churn")
    c = churn_result(run.capacity)
    head = headline(run)
    assert head.verdict.startswith("No: retains 2.00 MiB per closed session")
    assert head.figures[0].value == c.retained_mib_per_session == pytest.approx(2.0)
    assert section_titles(md)[2] == "Churn (open, prompt, close)"


def test_rounds_headline_names_each_round_and_the_first_that_failed(tmp_path):
    run, md = report(tmp_path, "rounds")
    table = rounds_table(run)
    head = headline(run)
    failed = table[~table["passed"].astype(bool)]
    assert head.verdict.startswith(
        f"No: round {failed.index[0]} (10 tasks submitted, at most 6 ran at once by the gateway's "
        "in-progress count) failed"
    )
    assert len(head.figures) >= len(table)
    for (i, row), figure in zip(table.iterrows(), head.figures, strict=False):
        assert figure.label == f"round {i}" and f"peak {row['peak_target_rss_mib']:,.0f} MiB" in figure.value
    assert section_titles(md)[2] == "Rounds" and "![rounds](rounds.png)" in md
