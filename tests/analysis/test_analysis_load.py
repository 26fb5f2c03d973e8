"""Damaged run directories still load and report, naming what is missing instead of printing zeros."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import analysis.load
from analysis import __main__ as analysis_command
from analysis.load import load_run, resolve_run_dir
from analysis.report import write_report
from contract import exit_codes, schema
from tests.synthetic import soak_samples, stream_requests, write_run_dir

META = {"run_id": "damaged", "stop_reason": "target died", "exit_code": 3}


def test_samples_truncated_mid_line_keeps_complete_rows_and_names_it(tmp_path):
    write_run_dir(tmp_path, META, samples=soak_samples(100), requests=stream_requests(50, 100))
    raw = (tmp_path / "samples.csv").read_bytes()
    (tmp_path / "samples.csv").write_bytes(raw[: raw.rfind(b"\n", 0, len(raw) - 1) + 25])
    run = load_run(tmp_path)
    assert len(run.samples) == 99
    assert run.samples["target_rss_bytes"].notna().all()
    assert any("samples.csv ends in a truncated line" in m for m in run.missing)
    report = write_report(tmp_path)
    assert "samples.csv ends in a truncated line" in report.read_text()
    assert "samples.csv ends in a truncated line" in (tmp_path / "report.md").read_text()


def test_run_without_requests_reports_requests_absent_not_zero(tmp_path):
    write_run_dir(tmp_path, META, samples=soak_samples(60))
    report = tmp_path / "report.md"
    write_report(tmp_path)
    text = report.read_text()
    assert "requests.csv is absent" in text
    assert "request latency" in text.split("## Not measured")[1]
    assert "| requests |" not in text


def test_empty_and_header_only_files_are_named(tmp_path):
    write_run_dir(tmp_path, META, samples=soak_samples(10), tasks=pd.DataFrame())
    (tmp_path / "requests.csv").write_text("")
    run = load_run(tmp_path)
    assert run.requests is None
    assert "requests.csv is empty" in run.missing
    assert "tasks.csv has a header but no rows" in run.missing


@pytest.mark.parametrize("cell", ["garbage", "1e29821383763"])  # the second crashed pandas' parser
def test_non_numeric_cell_blanks_only_that_cell(tmp_path, cell):
    write_run_dir(tmp_path, META, samples=soak_samples(10))
    lines = (tmp_path / "samples.csv").read_text().splitlines()
    cells = lines[3].split(",")
    cells[4] = cell  # target_rss_bytes
    lines[3] = ",".join(cells)
    (tmp_path / "samples.csv").write_text("\n".join(lines) + "\n")
    run = load_run(tmp_path)
    assert len(run.samples) == 10
    assert run.samples["target_rss_bytes"].isna().sum() == 1
    assert any("1 non-numeric cell" in m for m in run.missing)


def test_absent_run_json_and_absent_columns_are_named(tmp_path):
    soak_samples(10)[["ts", "target_rss_bytes"]].to_csv(tmp_path / "samples.csv", index=False)
    run = load_run(tmp_path)
    assert run.meta == {}
    assert any(m.startswith("run.json is absent") for m in run.missing)
    assert any("samples.csv lacks column(s)" in m and "host_available_bytes" in m for m in run.missing)
    assert run.samples["host_available_bytes"].isna().all()
    write_report(tmp_path)


@pytest.mark.e2e
def test_cli_on_missing_directory_prints_one_line_and_exits_bad_input(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "analysis", str(tmp_path / "nope")], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == exit_codes.BAD_INPUT
    assert proc.stderr.strip().count("\n") == 0
    assert "run directory not found" in proc.stderr


@pytest.mark.e2e
def test_nan_and_inf_latencies_in_a_hand_edited_requests_csv_are_skipped_and_counted(tmp_path):
    """A written nan or inf is no empty cell: its row is skipped and counted, never averaged or plotted
    (an inf latency put the time axis at infinity: a traceback in `python -m analysis`)."""
    write_run_dir(tmp_path, META, samples=soak_samples(30), requests=stream_requests(40, 30))
    lines = (tmp_path / "requests.csv").read_text().splitlines()
    column = lines[0].split(",").index("latency_ms")
    for n, text in ((1, "nan"), (2, "NaN"), (3, "inf"), (4, "-inf")):
        cells = lines[n].split(",")
        cells[column] = text
        lines[n] = ",".join(cells)
    (tmp_path / "requests.csv").write_text("\n".join(lines) + "\n")
    run = load_run(tmp_path)
    assert len(run.requests) == 36 and np.isfinite(run.requests["latency_ms"]).all()
    assert "requests.csv: 4 row(s) with a non-finite number (nan, inf) skipped" in run.missing
    proc = subprocess.run(
        [sys.executable, "-m", "analysis", str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == exit_codes.OK and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "4 row(s) with a non-finite number" in (tmp_path / "report.md").read_text()


def test_negative_latencies_from_a_clock_step_are_counted_apart_and_left_out_of_percentiles(tmp_path):
    """Truth: 40 requests, 3 of them given a negative latency (-683,691 ms, as a clock step back gave) and
    one of those a negative TTFT too: the percentiles are those of the 37 others, the 40 rows all
    counted, and the report says how many were left out and why (it printed "p50 -683,691 ms")."""
    requests = stream_requests(40, 30)
    requests.loc[[3, 7, 11], "latency_ms"] = -683_691.0
    requests.loc[7, "ttft_ms"] = -683_000.0
    write_run_dir(tmp_path, META, samples=soak_samples(30), requests=requests)
    run = load_run(tmp_path)
    assert len(run.requests) == 40 and run.requests["latency_ms"].isna().sum() == 3
    assert not (run.requests[["latency_ms", "ttft_ms"]] < 0).any().any()
    note = "requests.csv: 3 row(s) with a negative duration (the clock stepped back during them)"
    assert any(m.startswith(note) for m in run.missing), run.missing
    kept = requests.drop(index=[3, 7, 11])["latency_ms"]
    assert run.requests["latency_ms"].median() == pytest.approx(kept.median())
    assert note in write_report(tmp_path).read_text()


def test_a_profile_without_phases_reports(tmp_path):
    """run.json `profile.phases: []` (a profile of no time, as `--stages 0s:0` was before it was refused):
    the report is written (it failed with zip()'s ValueError, and the run ended 7 saying 6)."""
    write_run_dir(tmp_path, {**META, "profile": {"name": "smoke", "phases": []}}, samples=soak_samples(10))
    assert load_run(tmp_path).meta["profile"]["phases"] == []
    assert write_report(tmp_path).exists()


def test_the_report_command_reads_the_run_directory_once(tmp_path, monkeypatch, capsys):
    """`python -m analysis RUN_DIR` (the kit's report child at the end of every run): the report, its
    summary.json and the console summary share one load of the run directory, each file read once."""
    write_run_dir(tmp_path, META, samples=soak_samples(100), requests=stream_requests(50, 100))
    reads: list[str] = []
    for name in ("_read_csv", "_read_meta"):
        monkeypatch.setattr(analysis.load, name, _counted(getattr(analysis.load, name), reads))
    assert analysis_command.main([str(tmp_path)]) == exit_codes.OK
    assert "report: " in capsys.readouterr().out
    assert schema.REQUESTS_CSV in reads and schema.RUN_JSON in reads
    assert sorted(reads) == sorted(set(reads)), reads


def _counted(read, reads: list[str]):
    def counting(path, *args, **kwargs):
        reads.append(path.name)
        return read(path, *args, **kwargs)

    return counting


def test_a_relative_run_dir_is_found_from_where_jupyter_started_then_the_notebook_then_the_root(tmp_path):
    """`RUN_DIR=runs/<id> jupyter lab` from the repository root: the kernel runs in analysis/notebooks,
    so a relative RUN_DIR is read from the shell's directory first; an absolute one as given."""
    started, notebooks, root = tmp_path / "started", tmp_path / "nb", tmp_path / "root"
    (root / "runs" / "a").mkdir(parents=True)
    (started / "runs" / "b").mkdir(parents=True)
    notebooks.mkdir()
    assert resolve_run_dir("runs/a", started, notebooks, root) == root / "runs" / "a"
    assert resolve_run_dir("runs/b", started, notebooks, root) == started / "runs" / "b"
    assert resolve_run_dir(str(root / "runs" / "a"), started) == root / "runs" / "a"
    assert resolve_run_dir("runs/none", started, notebooks, root) == started / "runs" / "none"


def test_ids_that_read_like_huge_exponents_load_as_text(tmp_path):
    """A hex id such as 0e29821383763f4b (the simulator's conversation hash; a gateway's session id) is
    text: left to pandas' inference it parses as a number with an exponent of 29,821,383,763 and crashes
    its C parser (a segmentation fault, found in a real run's model_calls.csv)."""
    write_run_dir(tmp_path, META, samples=soak_samples(60))
    model_calls = {c: [1] for c in schema.MODEL_CALL_COLUMNS} | {
        schema.MODEL_CALL.conversation: ["0e29821383763f4b"],
        schema.MODEL_CALL.response_id: ["9e99999999999999"],
    }
    pd.DataFrame(model_calls).to_csv(tmp_path / schema.MODEL_CALLS_CSV, index=False)
    capacity = {c: [1] for c in schema.CAPACITY_COLUMNS} | {schema.CAPACITY.session_id: ["1e4000000000abc"]}
    pd.DataFrame(capacity).to_csv(tmp_path / schema.CAPACITY_CSV, index=False)
    run = load_run(tmp_path)
    assert run.model_calls is not None and run.capacity is not None
    assert run.model_calls[schema.MODEL_CALL.conversation].tolist() == ["0e29821383763f4b"]
    assert run.capacity[schema.CAPACITY.session_id].tolist() == ["1e4000000000abc"]
    assert run.model_calls[schema.MODEL_CALL.tokens_in].tolist() == [1.0]
