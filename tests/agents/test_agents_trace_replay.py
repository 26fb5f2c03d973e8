"""A 200-request trace replayed by `locust -f locustfile.py --headless ChatAgent --trace FILE`, at its own
timing and 10 times faster: every line is sent once, at its size, with its session; its first request's
start_lateness_ms is sent minus due (due = the pacer's start in run.json + the line's offset); at 1x the
p95 is within 20 ms plus what the machine's scheduling delay costs right now, and the report's Arrivals
section counts the late starts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from contract.exit_codes import OK
from tests.locust_runs import run_locust
from tests.machine_noise import NoiseWindow, Take, judge, retake

pytestmark = pytest.mark.e2e
LINES = 200
GAP_MS = 50  # 20 requests a second at 1x: 10 s of trace
QUIET_BAR_MS = 20.0
CAP_MS = GAP_MS / 2  # a replay a line behind its trace must still fail


def write_trace(path) -> list[float]:
    """Lines 50 ms apart, each with its own input size (100 + k), so a row names its line."""
    rows = []
    for k in range(LINES):
        row = {"timestamp": k * GAP_MS, "input_length": 100 + k, "output_length": 4}
        rows.append(row | ({"session_id": f"s{k % 7}"} if k % 2 else {}))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [k * GAP_MS / 1000.0 for k in range(LINES)]


def replay(tmp_path, speed: float):
    tmp_path.mkdir(parents=True, exist_ok=True)
    trace = tmp_path / "trace.jsonl"
    offsets = write_trace(trace)
    run_dir = tmp_path / f"run-{speed:g}"
    sim = "--ttft-ms 5 --itl-ms 1 --output-tokens 4"
    window = NoiseWindow()
    done = run_locust(
        run_dir, "ChatAgent", "--trace", str(trace), "--trace-speed", str(speed), "--sim-args", sim
    )
    window.close()
    assert done.returncode == OK, done.stderr[-2000:]
    rows = pd.read_csv(run_dir / "requests.csv")
    meta = json.loads((run_dir / "run.json").read_text())
    line = (rows["asked_tokens_in"] - 100).astype(int)
    due = meta["open_model"]["start_ts"] + np.array(offsets)[line] / speed
    # the recorded start lateness is sent minus due, due as the trace says
    assert (rows["start_lateness_ms"] - (rows["ts"] - due) * 1000.0).abs().max() < 1.0
    report = (run_dir / "report.md").read_text()
    return rows.assign(line=line, lateness_ms=rows["start_lateness_ms"]), meta, window, report


@pytest.mark.timing
def test_a_trace_replayed_at_its_own_timing_starts_each_request_within_20_ms(tmp_path):
    attempt = iter(range(3))

    def p95_lateness() -> Take:
        rows, meta, window, report = replay(tmp_path / f"attempt-{next(attempt)}", 1.0)
        assert sorted(rows["line"]) == list(range(LINES)) and (rows["ok"] == 1).all()
        assert meta["profile"]["name"] == "trace" and meta["open_model"]["dropped_arrivals"] == 0
        assert (rows["asked_tokens_out"] == 4).all()
        assert rows["tokens_in"].sub(rows["asked_tokens_in"]).abs().max() <= 2
        odd = rows[rows["line"] % 2 == 1]
        assert (odd["session_id"] == odd["line"].map(lambda k: f"{meta['run_id']}-trace-s{k % 7}")).all()
        assert rows["lateness_ms"].min() > -1.0  # never early
        late = int((rows["lateness_ms"] > 100.0).sum())  # the report's rule for a late start
        arrivals = report.split("## Arrivals", 1)[1].split("\n## ", 1)[0]
        assert f"| late | {late} |" in arrivals and "| dropped arrivals | 0 |" in arrivals, arrivals
        p95 = float(np.percentile(rows["lateness_ms"], 95))
        return [window.reading("p95 start lateness", p95, QUIET_BAR_MS, CAP_MS)]

    assert all(r.passed for r in judge(retake(p95_lateness)))


def test_a_trace_replayed_ten_times_faster_sends_every_line_in_a_tenth_of_the_time(tmp_path):
    rows, meta, _, _ = replay(tmp_path, 10.0)
    assert sorted(rows["line"]) == list(range(LINES)) and meta["open_model"]["dropped_arrivals"] == 0
    span = rows["ts"].max() - rows["ts"].min()
    assert span == pytest.approx((LINES - 1) * GAP_MS / 1000.0 / 10, abs=0.2)
