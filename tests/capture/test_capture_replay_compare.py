"""One agent, many gateways, one table: a recording replayed against two simulators that differ by one
knob (time to first token 40 ms and 160 ms, the known truth), then `python -m analysis compare` of the two
runs: each gateway's column reads its calls (the model's own count beside the kit's), its latency apart
by the knob's 120 ms, tokens and dollars per copy, done copies, and the recording's figures beside them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from analysis.compare import RECORDING, compare_table
from analysis.load import load_run
from contract.exit_codes import OK
from simgateway import launch
from tests.capture.test_capture_recorder import TOOL_STEPS
from tests.capture.test_capture_replay import copies, recorded_session
from tests.locust_runs import run_locust
from tests.paths import REPO

pytestmark = pytest.mark.e2e
KNOB = "--ttft-ms"
TTFTS = (40, 160)
COPIES = 4


def test_one_recording_replayed_on_two_gateways_compares_in_one_table_beside_the_recording(tmp_path):
    recorded = recorded_session(tmp_path)
    run_dirs = []
    for ttft in TTFTS:
        sim = [KNOB, str(ttft), "--itl-ms", "2", "--output-tokens", "8", "--tool-call-steps", str(TOOL_STEPS)]
        run_dir = tmp_path / f"ttft-{ttft}"
        with launch.running(sim) as gw:
            args = ("--host", gw.url, "--model-calls-url", gw.url, "--sessions", str(recorded))
            done = run_locust(run_dir, *args, *copies(COPIES), "--identical-copies")
        assert done.returncode == OK, done.stderr[-3000:]
        run_dirs.append(run_dir)
    table = compare_table([load_run(d) for d in run_dirs])
    fast, slow = table.columns[:2]
    calls = COPIES * (TOOL_STEPS + 1)
    for column in (fast, slow):
        assert table.loc["copies done", column] == COPIES
        assert table.loc["model calls", column] == table.loc["model calls at the model", column] == calls
        assert table.loc["model calls per copy p50", column] == TOOL_STEPS + 1
        assert table.loc["tokens in per copy p50", column] == table.loc["tokens in per copy p50", RECORDING]
        assert table.loc["$ per copy p50 (list)", column] > 0
    apart = table.loc["model call latency p50 (ms)", slow] - table.loc["model call latency p50 (ms)", fast]
    assert 120 - 30 <= apart <= 120 + 30, table.loc["model call latency p50 (ms)"]
    per_copy = table.loc["model time per copy p50 (ms)"]
    assert 0.7 * 120 * (TOOL_STEPS + 1) <= per_copy[slow] - per_copy[fast] <= 1.3 * 120 * (TOOL_STEPS + 1)
    assert table.loc["model calls per copy p50", RECORDING] == TOOL_STEPS + 1
    assert table.loc["model call latency p50 (ms)", RECORDING] > 0  # the recording's own, at 40 ms
    printed = subprocess.run(
        [sys.executable, "-m", "analysis", "compare", *map(str, run_dirs)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert printed.returncode == 0 and "| model calls at the model |" in printed.stdout, printed.stderr
    assert f"| {RECORDING} |" in printed.stdout.splitlines()[0] + " |"
