"""A newcomer's first run: an empty HOME (no matplotlib font cache, no caches of any kind) must still get
the whole run directory, the report and the printed summary, with no traceback.

On a machine with fontconfig, matplotlib's first import runs `fc-list`; inside a gevent-patched thread
that failed and cost the whole report on every run (issue 23, point 1).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from contract import exit_codes
from kit.finish import print_outcome, start_report
from tests.locust_runs import LOCUST, chat_smoke_args
from tests.paths import REPO

pytestmark = pytest.mark.e2e

FILES = ("run.json", "samples.csv", "requests.csv", "report.md", "report.html", "timeline.png")


def test_a_run_with_an_empty_home_writes_its_report_and_summary(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "MPLCONFIGDIR")}
    env["HOME"] = str(home)
    run_dir = tmp_path / "run"
    args = chat_smoke_args("4s", "--ttft-ms 50 --itl-ms 5")
    proc = subprocess.run(
        [*LOCUST, "--run-dir", str(run_dir), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-2000:]
    assert "Traceback" not in output
    assert [f for f in FILES if not (run_dir / f).is_file() or not (run_dir / f).stat().st_size] == []
    assert f"run directory: {run_dir}" in proc.stdout and "TTFT: p50" in proc.stdout  # the summary
    assert json.loads((run_dir / "run.json").read_text())["report"]["written"] is True
    if shutil.which("fc-list"):  # the defect's condition: fontconfig present, its cache built by this run
        assert any((home / ".cache" / "matplotlib").glob("fontlist-*.json"))


def test_a_report_that_cannot_be_written_is_one_line_with_the_rebuild_command(tmp_path, capsys):
    """The report's child process really fails (a directory that is no run): the outcome says so, the
    kit prints one line of it and the rebuild command, and no traceback."""
    outcome = start_report(tmp_path).get()
    assert not outcome.written and outcome.returncode != 0
    assert outcome.as_json(tmp_path) == {
        "written": False,
        "problems": outcome.complaints,
        "rebuild": f"python -m analysis {tmp_path}",
    }
    print_outcome(outcome, tmp_path)
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 2, err
    assert "not a run directory" in err and f"rebuild it with: python -m analysis {tmp_path}" in err
    assert f"exit code {exit_codes.REPORT_FAILED}" in err
