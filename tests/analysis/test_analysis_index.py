"""`python -m analysis index` over a folder of runs of two profiles: every run listed newest first with
its headline, a trend chart per profile and target, and unreadable directories listed with their reason."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from analysis.index import index_rows
from tests.paths import REPO
from tests.report_runs import recorded_run
from tests.synthetic import T0

DAY = 86400.0


def runs_folder(root: Path) -> Path:
    """Three nightly soaks whose leak grows night by night, two average runs, and two bad directories."""
    for night, leak in enumerate((0.0, 60.0, 240.0)):
        recorded_run(root / f"soak-{night}", "soak", t0=T0 + night * DAY, leak_mib_per_h=leak)
    for day in range(2):
        recorded_run(root / f"average-{day}", "average", t0=T0 + (day + 0.5) * DAY)
    (root / "empty").mkdir()
    (root / "garbage").mkdir()
    (root / "garbage" / "run.json").write_bytes(b"\x00\xff{not json")
    return root


@pytest.mark.e2e
def test_index_lists_every_run_newest_first_with_trends_and_unreadable_reasons(tmp_path):
    root = runs_folder(tmp_path / "runs")
    proc = subprocess.run(
        [sys.executable, "-m", "analysis", "index", str(root)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    md = (root / "index.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| ") and "-run" not in line]
    rows = [r for r in rows if r.split(" | ")[0].strip("| ").startswith(("soak-", "average-"))]
    names = [r.split(" | ")[0].strip("| ") for r in rows]
    assert names == ["soak-2", "average-1", "soak-1", "average-0", "soak-0"]
    assert "No: memory: leak" in rows[0] and "Yes: memory: no evidence of leak" in rows[-1]
    assert "1 of 2 thresholds failed" in rows[1]
    assert "## Trend: soak against simulator http://127.0.0.1:8000" in md
    assert "## Trend: average against simulator http://127.0.0.1:8000" in md
    assert "empty: not a run directory: no run.json and no run CSV" in md
    assert "garbage" in md and "run.json is unreadable" in md
    html = (root / "index.html").read_text()
    assert html.count("data:image/png;base64,") == 2


def test_index_trend_of_the_soak_slope_rises_night_by_night(tmp_path):
    root = runs_folder(tmp_path / "runs")
    soaks = [r for r in index_rows(root) if r.profile == "soak"]
    slopes = [next(f.value for f in r.figures if f.label == "target RSS slope") for r in soaks]
    assert slopes[0] > slopes[1] > slopes[2]  # newest first: 240, 60, ~0 MiB/h
