"""Campaigns: K fresh load-generator processes, each with a fresh target, aggregated; before/after."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kit import campaign
from tests.paths import REPO

pytestmark = pytest.mark.e2e

SIM = "--agent-startup-ms 0 --agent-mib 4 --first-agent-mib 20"


def run_campaign(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "kit.campaign",
        "--locustfile",
        str(REPO / "locustfile.py"),
        "--timeout",
        "120",
        *argv,
    ]
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_campaign_of_3_runs_prints_rows_median_range_each_with_a_distinct_target(tmp_path):
    out = tmp_path / "c"
    done = run_campaign(
        tmp_path, "--runs", "3", "--out", str(out), "--sim-args", SIM, "--", "--memory-budget", "200MiB"
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    header = next(line for line in done.stdout.splitlines() if line.startswith("| measure"))
    assert all(col in header for col in ("run-1", "run-2", "run-3", "median", "range"))
    table = pd.read_csv(out / campaign.RUNS_CSV, index_col="measure")
    assert table.loc["stop reason", "median"] == "budget"
    assert pd.to_numeric(table.loc["N_max", ["run-1", "run-2", "run-3"]]).notna().all()
    pids = [r["target_pid"] for r in json.loads((out / campaign.CAMPAIGN_JSON).read_text())["runs"]]
    assert len(set(pids)) == 3 and all(pids)
    assert (out / campaign.PLOT_PNG).stat().st_size > 0


def test_campaign_compares_two_saved_campaigns_before_after(tmp_path):
    before, after = tmp_path / "before", tmp_path / "after"
    for out, mib in ((before, "16"), (after, "4")):
        done = run_campaign(
            tmp_path,
            "--runs",
            "1",
            "--out",
            str(out),
            "--sim-args",
            f"--agent-startup-ms 0 --agent-mib {mib} --first-agent-mib 20",
            "--",
            "--memory-budget",
            "200MiB",
        )
        assert done.returncode == 0, done.stderr[-2000:]
    table = campaign.compare(before, after, tmp_path)
    ratio = table.loc["marginal RSS (MiB/agent)", "after / before"]
    assert ratio == pytest.approx(4 / 16, rel=0.1)
    assert table.loc["N_max", "after / before"] > 2


def test_campaign_with_a_missing_directory_says_one_line(tmp_path):
    done = run_campaign(tmp_path, "--compare", str(tmp_path / "nope"), str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().startswith("campaign: error: campaign directory not found")
    assert len(done.stderr.strip().splitlines()) == 1
