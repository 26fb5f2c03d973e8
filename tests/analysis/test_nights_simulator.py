"""End to end: five short nights against the simulator (TTFT 300 ms), then a sixth whose gateway answers
in 400 ms: `python -m analysis index RUNS --judge` exits 99 naming TTFT with tonight's and the nights'
values; a sixth like the others exits 0. Real Locust runs of a few seconds, sequential as nights are."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from analysis.index import JUDGEMENT_JSON
from contract.exit_codes import OK, THRESHOLD_FAILED
from tests.locust_runs import chat_smoke
from tests.paths import REPO

# timing: the nights' p95 TTFT is the judged figure; a host busy with other tests widens their spread
pytestmark = [pytest.mark.e2e, pytest.mark.timing]


def _night(root, name: str, ttft_ms: int) -> None:
    proc = chat_smoke(root / name, "3s", f"--ttft-ms {ttft_ms}")
    assert proc.returncode == OK, proc.stderr[-2000:]


def _judge(root) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "analysis", "index", str(root), "--judge"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_a_slower_sixth_night_fails_the_judgement_naming_ttft_and_a_like_one_passes(tmp_path):
    nights = tmp_path / "nights"
    for i in range(5):
        _night(nights, f"night-{i}", 300)
    slower, alike = tmp_path / "slower", tmp_path / "alike"
    shutil.copytree(nights, slower)
    shutil.copytree(nights, alike)
    _night(slower, "tonight", 400)
    _night(alike, "tonight", 300)

    judged = _judge(slower)
    assert judged.returncode == THRESHOLD_FAILED, judged.stdout + judged.stderr[-2000:]
    assert "p95 TTFT: regressed: tonight 4" in judged.stdout
    assert "against the last 5 nights' 3" in judged.stdout
    (group,) = json.loads((slower / JUDGEMENT_JSON).read_text())["groups"]
    ttft = next(f for f in group["figures"] if f["name"] == "ttft_p95")
    assert ttft["tonight"] > 390 and all(295 < v < 360 for v in ttft["nights"]), ttft

    judged = _judge(alike)
    assert judged.returncode == OK, judged.stdout + judged.stderr[-2000:]
    assert "within the nights' spread" in judged.stdout
