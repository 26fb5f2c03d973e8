"""The report says what happened, in words that do not mislead: a capacity run that
reached its budget did not "end early"; a file the run's agents never write is not "absent"; the two peak
RSS figures of a capacity report say which is which; a PSS capacity run is not "median of 3 readings";
the as-billed dollars are not "at list price"; the run index has an exit-code column and never draws one
trend through two targets behind one URL. Recorded run directories, no processes.
"""

from __future__ import annotations

from analysis.capacity import PEAK_AT_STEPS, capacity_section
from analysis.churn import churn_result
from analysis.cost import DollarTotal, describe_total
from analysis.headline import headline
from analysis.index import index_rows, trend_plots
from analysis.load import load_run
from analysis.report import build_sections
from contract import schema
from tests.analysis.test_capacity_analysis import synthetic_run
from tests.report_runs import meta
from tests.synthetic import T0, soak_samples, write_run_dir

BUDGET_STOP = "capacity: budget reached at N=13 (RSS 203.2 MiB >= 200 MiB)"


def capacity_dir(path, **extra):
    write_run_dir(path, meta("capacity", path.name, duration_s=30, **extra), samples=soak_samples(30))
    synthetic_run().to_csv(path / schema.CAPACITY_CSV, index=False)
    return load_run(path)


def test_a_capacity_run_that_reached_its_budget_did_not_end_early(tmp_path):
    done = capacity_dir(tmp_path / "done", stop_reason=BUDGET_STOP, ended_early=False)
    assert "ended early" not in headline(done).verdict
    cut = capacity_dir(tmp_path / "cut", stop_reason="interrupted by SIGTERM", ended_early=True)
    assert headline(cut).verdict.endswith("The run ended early: interrupted by SIGTERM.")
    old = capacity_dir(tmp_path / "old", stop_reason="interrupted by SIGINT")  # before `ended_early`
    assert "The run ended early: interrupted by SIGINT." in headline(old).verdict


def test_a_row_file_the_run_never_wrote_is_not_reported_absent(tmp_path):
    rows = {schema.REQUESTS_CSV: 26, schema.TASKS_CSV: 0, schema.AGENTS_CSV: 26}
    run = capacity_dir(tmp_path / "cap", rows_written=rows)
    assert not [m for m in run.missing if schema.TASKS_CSV in m], run.missing
    older = capacity_dir(tmp_path / "older")  # no record of what was written: absent is all it knows
    assert f"{schema.TASKS_CSV} is absent" in older.missing


def test_the_two_peak_figures_of_a_capacity_report_say_which_is_which(tmp_path):
    run = capacity_dir(tmp_path / "cap", sampler={"interval_s": 1.0})
    sections = {s.title: s for s in build_sections(run, None, None)}
    capacity = sections["Capacity"].tables[0][1]
    assert PEAK_AT_STEPS in capacity.index and "peak (MiB)" not in capacity.index
    resources = sections["Resources"]
    assert any("side sampler's, read every 1 s between the capacity steps" in n for n in resources.notes)


def test_a_pss_capacity_run_is_read_once_per_step_not_median_of_3(tmp_path):
    frame = synthetic_run().assign(metric="pss", pss_bytes=lambda f: f["rss_bytes"])
    write_run_dir(tmp_path / "pss", meta("capacity", "pss", duration_s=30))
    frame.to_csv(tmp_path / "pss" / schema.CAPACITY_CSV, index=False)
    notes = " ".join(capacity_section(load_run(tmp_path / "pss")).notes)
    assert "one PSS reading after each agent" in notes and "median of 3" not in notes
    rss_notes = " ".join(capacity_section(capacity_dir(tmp_path / "rss")).notes)
    assert "median of 3 RSS readings" in rss_notes
    assert churn_result(synthetic_run()).suggestion is not None  # no closes: "not enough cycles", a hint


def test_the_as_billed_total_is_not_called_list_price():
    total = DollarTotal(
        usd=0.16,
        calls=48,
        gateway_usd=float("nan"),
        gateway_calls=0,
        table_only_usd=0.16,
        table_only_calls=48,
        table_usd=0.16,
        table_calls=48,
        compared_calls=0,
        diff_pct=float("nan"),
    )
    line = describe_total(total)
    assert "list price" not in line and "as billed at the price table's rates" in line


def nightly(root, name: str, night: int, sampled: list[str], exit_code: int):
    url, t0 = "http://127.0.0.1:9000", T0 + night * 86400
    target = {"url": url, "gateway": "hermes", "started_by_kit": False, "sampled": sampled}
    extra = {"target": target, "exit_code": exit_code}
    samples = soak_samples(3600, interval_s=5, t0=t0)
    write_run_dir(root / name, meta("soak", name, t0=t0, duration_s=3600, **extra), samples=samples)


def test_the_run_index_shows_exit_codes_and_trends_one_target_at_a_time(tmp_path):
    """Four nights behind the same URL: two sampled the gateway's process, two another process (a
    different gateway put behind the URL): two trends of two runs, never one of four."""
    root = tmp_path / "runs"
    ours, theirs = ["pid running: hermes gateway run"], ["pid running: other-gateway serve"]
    for night, (sampled, code) in enumerate([(ours, 0), (theirs, 99), (ours, 7), (theirs, 0)]):
        nightly(root, f"night-{night}", night, sampled, code)
    rows = index_rows(root)
    assert [r.exit_code for r in rows] == ["0", "7", "99", "0"]  # newest first
    assert len({r.target for r in rows}) == 2
    assert all("http://127.0.0.1:9000" in r.target for r in rows)
    plots = trend_plots(rows, tmp_path)
    assert len(plots) == 2 and {target for _, target in plots} == {r.target for r in rows}
