"""Report files, the extra-section registry, the compare command and the console summary."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.compare import compare_table
from analysis.load import load_run
from analysis.model import Section
from analysis.report import extra_sections, write_report
from analysis.summary import console_summary
from contract.schema import MIB
from tests.paths import REPO
from tests.synthetic import T0, rounds_run, soak_samples, stream_requests, write_run_dir

META = {
    "run_id": "r1",
    "stop_reason": "profile complete",
    "exit_code": 0,
    "start_ts": T0,
    "end_ts": T0 + 600,
    "profile": {
        "name": "average",
        "phases": [
            {"name": "ramp", "start_ts": T0, "end_ts": T0 + 60},
            {"name": "plateau", "start_ts": T0 + 60, "end_ts": T0 + 600},
        ],
    },
}


@pytest.fixture
def full_run(tmp_path) -> Path:
    return write_run_dir(
        tmp_path / "r1", META, samples=soak_samples(600), requests=stream_requests(3000, 600)
    )


def test_html_report_is_self_contained_with_embedded_images(full_run):
    out = write_report(full_run)
    html = out.read_text()
    assert out == full_run / "report.html"
    assert html.count("data:image/png;base64,") >= 2  # timeline and latency vs users
    assert not re.search(r"""(src|href)=['"](?!data:)""", html)  # nothing fetched from outside
    md = (full_run / "report.md").read_text()
    assert "![timeline](timeline.png)" in md and (full_run / "timeline.png").stat().st_size > 0


def test_rounds_run_report_has_rounds_table(tmp_path):
    write_report(rounds_run(tmp_path))
    md = (tmp_path / "report.md").read_text()
    assert "**rounds**" in md and "available memory below 1024 MiB" in md


def test_registry_includes_sections_and_names_a_failing_one(full_run):
    def good(run):
        return Section("Extra", notes=["from a plug-in"])

    def broken_section(run):
        raise ValueError("bad price file")

    sections = extra_sections(load_run(full_run), [good, lambda run: None, broken_section])
    assert [s.title for s in sections] == ["Extra", "broken section"]
    assert sections[1].notes == ["failed: ValueError: bad price file"]


def test_console_summary_names_memory_latency_with_counts_and_path(full_run):
    text = console_summary(load_run(full_run))
    assert "run r1: profile complete" in text
    peak = soak_samples(600)["target_rss_bytes"].max() / MIB
    assert f"peak target RSS: {peak:,.1f} MiB" in text
    assert re.search(r"latency of 29\d\d successful requests, by operation:", text)
    assert re.search(r"\n  [\w.]+: p50 [\d,]+ ms, p95 [\d,]+ ms \(n=\d+\)", text)
    assert re.search(r"TTFT: p50 [\d,]+ ms", text)
    assert "missing: tasks.csv is absent" in text
    assert f"run directory: {full_run}" in text


@pytest.mark.parametrize("procs", [0, 2], ids=["no-process-counted", "processes-read-0"])
def test_a_target_read_0_throughout_is_not_measured_in_the_summary_and_the_report(tmp_path, procs):
    """A selection that matched nothing (or a launcher the sampler did not follow): one line saying what
    was read and which options pick the processes; no 0 MiB figure anywhere."""
    samples = soak_samples(60).assign(target_procs=procs, target_rss_bytes=0, target_pss_bytes=0)
    meta = META | {"target": {"sampled": ["match: server-everything"]}}
    run_dir = write_run_dir(tmp_path / "r1", meta, samples=samples, requests=stream_requests(300, 60))
    text = console_summary(load_run(run_dir))
    counted = "no process counted" if procs == 0 else "RSS 0 in every reading"
    read = "the sampler read the target (match: server-everything) 60 times"
    line = f"target memory not measured: {read}, {counted}"
    assert "peak target RSS: not measured" in text and line in text
    assert "--target-pid, --target-match or --target-cgroup" in text and "processes.csv" in text
    write_report(run_dir)
    md = (run_dir / "report.md").read_text()
    assert line in md and "peak target RSS" not in md.split("**resources**")[1].split("\n\n")[1]
    assert json.loads((run_dir / "summary.json").read_text())["peak_target_rss_mib"] is None


def test_a_target_never_watched_is_no_target_read_0(tmp_path):
    samples = soak_samples(60).assign(target_procs=np.nan, target_rss_bytes=np.nan)
    text = console_summary(load_run(write_run_dir(tmp_path / "r1", META, samples=samples)))
    assert "target memory not measured" not in text


def test_compare_aggregates_median_range_and_cv_across_runs(tmp_path):
    runs = []
    for i, base in enumerate((100.0, 300.0)):
        samples = pd.DataFrame({"ts": T0 + np.arange(10.0), "target_rss_bytes": base * MIB})
        runs.append(load_run(write_run_dir(tmp_path / f"run{i}", {"run_id": f"run{i}"}, samples=samples)))
    row = compare_table(runs).loc["peak target RSS (MiB)"]
    assert (row["run0"], row["run1"], row["median"], row["min"], row["max"]) == (100, 300, 200, 100, 300)
    assert row["cv_pct"] == pytest.approx(70.71, abs=0.01)


def test_compare_names_runs_that_share_a_run_id_by_their_directory(tmp_path):
    """Two runs with one run id (a copied directory, a reused --run-id) and one run given twice: a column
    each (they shared one: the comparison showed one run of three)."""
    runs = []
    for i, base in enumerate((100.0, 300.0)):
        samples = pd.DataFrame({"ts": T0 + np.arange(10.0), "target_rss_bytes": base * MIB})
        runs.append(load_run(write_run_dir(tmp_path / f"copy{i}", {"run_id": "nightly"}, samples=samples)))
    row = compare_table([*runs, runs[0]]).loc["peak target RSS (MiB)"]
    first, second = f"nightly ({tmp_path / 'copy0'})", f"nightly ({tmp_path / 'copy1'})"
    assert (row[f"{first} #1"], row[second], row[f"{first} #3"], row["runs"]) == (100, 300, 100, 3)


def test_compare_keeps_its_measures_in_the_order_measured_when_runs_measured_different_ones(tmp_path):
    """A run with requests beside one without: the union of measures stays in headline order (pandas
    sorted a union of differing indexes by name)."""
    with_requests = load_run(write_run_dir(tmp_path / "a", {"run_id": "a"}, requests=stream_requests(20, 10)))
    bare = load_run(write_run_dir(tmp_path / "b", {"run_id": "b"}, samples=soak_samples(10)))
    measures = list(compare_table([bare, with_requests]).index)
    order = [measures.index(m) for m in ("requests", "error %", "latency p50 (ms)", "TTFT p50 (ms)")]
    assert order == sorted(order), measures  # by name: TTFT, error, latency, requests


@pytest.mark.e2e
def test_cli_builds_report_and_compares(full_run, tmp_path):
    other = write_run_dir(tmp_path / "r2", {**META, "run_id": "r2"}, samples=soak_samples(600, seed=1))
    run = subprocess.run(
        [sys.executable, "-m", "analysis", str(full_run)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert run.returncode == 0, run.stderr
    assert "report:" in run.stdout and (full_run / "report.html").exists()
    cmp = subprocess.run(
        [sys.executable, "-m", "analysis", "compare", str(full_run), str(other)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert cmp.returncode == 0, cmp.stderr
    assert "| measure | r1 | r2 | runs | median | min | max | cv_pct |" in cmp.stdout


def test_a_plot_that_cannot_be_drawn_leaves_the_tables_and_names_the_rebuild(full_run, monkeypatch, capsys):
    from analysis import plots

    def broken(*_args, **_kwargs):
        raise TypeError("child watchers are only available on the default loop")

    monkeypatch.setattr(plots, "timeline_plot", broken)
    write_report(full_run)
    md = (full_run / "report.md").read_text()
    assert "## Headline" in md and "**latency**" in md  # the tables are all there
    assert "timeline.png not drawn: TypeError: child watchers" in md
    assert f"rebuild: python -m analysis {full_run}" in md
    assert "latency_vs_users.png" in md  # the other plots are still drawn
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "timeline.png not drawn" in err
