"""Profiles, thresholds, rounds and the open model end to end, against the simulator's knobs.

Each run is a real `locust -f locustfile.py --headless` process; the run directory is checked.
"""

from __future__ import annotations

import json
import math
import re

import pandas as pd
import pytest

from analysis.breaking import breaking_level
from analysis.load import load_run
from contract import exit_codes, schema
from tests.locust_runs import chat_smoke, run_locust
from tests.machine_noise import NoiseWindow, judge, retake

pytestmark = pytest.mark.e2e

SIM_TTFT = "--ttft-ms 300 --itl-ms 10 --output-tokens 5"


def meta_of(run_dir) -> dict:
    return json.loads((run_dir / schema.RUN_JSON).read_text())


def chat_run_with_threshold(run_dir, threshold: str, duration: str):
    """Four chat agents against a simulator whose TTFT knob is 300 ms, judged by one threshold."""
    return chat_smoke(run_dir, duration, SIM_TTFT, "--threshold", threshold)


@pytest.mark.timing
def test_ttft_threshold_below_the_knob_aborts_after_its_grace_with_exit_99(tmp_path):
    """The threshold's value is the run's TTFT p95: the 300 ms knob within 100 ms on a quiet machine,
    widened by the noise measured around the run, capped at 150 ms (half the knob: a value that far off
    is not the TTFT, e.g. seconds read as ms)."""

    def run_and_value() -> list:
        run_dir = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
        noise = NoiseWindow()
        done = chat_run_with_threshold(run_dir, "ttft_ms p95 < 150 abort grace=4s", "40s")
        noise.close()
        assert done.returncode == exit_codes.THRESHOLD_FAILED, done.stderr[-1500:]
        meta = meta_of(run_dir)
        [threshold] = meta["thresholds"]
        assert threshold["passed"] is False
        assert meta["exit_code"] == exit_codes.THRESHOLD_FAILED
        assert meta["stop_reason"].startswith("threshold failed: ttft_ms p95 < 150")
        assert meta["end_ts"] - meta["start_ts"] >= 4.0  # no abort before the grace period
        assert meta["end_ts"] - meta["start_ts"] < 30  # stopped by the threshold, not by the profile's end
        assert "THRESHOLD FAILED: ttft_ms p95 < 150" in done.stdout
        return [noise.reading("threshold's TTFT p95 - 300 ms knob", threshold["value"] - 300, 100, 150, 10)]

    assert all(r.passed for r in judge(retake(run_and_value)))


def test_ttft_threshold_above_the_knob_passes_with_exit_0(tmp_path):
    run_dir = tmp_path / "run"
    done = chat_run_with_threshold(run_dir, "ttft_ms p95 < 1000 abort grace=2s", "6s")
    assert done.returncode == exit_codes.OK, done.stderr[-1500:]
    [threshold] = meta_of(run_dir)["thresholds"]
    assert threshold["passed"] is True and threshold["samples"] > 0


def test_rounds_record_a_baseline_two_rounds_and_a_queue_of_one_in_the_second(tmp_path):
    run_dir = tmp_path / "run"
    done = run_locust(
        run_dir,
        "TaskAgent",
        "--load-profile",
        "rounds",
        "--rounds",
        "2,4",
        "--baseline",
        "2s",
        "--sim-args",
        "--max-in-progress 3 --task-seconds 2 --dispatch-interval 0.2",
        "--sample-interval",
        "0.2",
        "--poll-interval",
        "0.2",
        timeout=120,
    )
    assert done.returncode == exit_codes.OK, done.stderr[-1500:]
    meta = meta_of(run_dir)
    phases = [p["name"] for p in meta["profile"]["phases"]]
    assert phases[0] == "baseline" and "round-1" in phases and "round-2" in phases
    rounds = meta["profile"]["rounds"]
    assert [(r["round"], r["concurrency"], r["end_reason"]) for r in rounds] == [
        (1, 2, "tasks finished"),
        (2, 4, "tasks finished"),
    ]
    samples = pd.read_csv(run_dir / schema.SAMPLES_CSV)
    first = samples[(samples.ts >= rounds[0]["start_ts"]) & (samples.ts <= rounds[0]["end_ts"])]
    second = samples[(samples.ts >= rounds[1]["start_ts"]) & (samples.ts <= rounds[1]["end_ts"])]
    # Tasks wait for the dispatcher's next tick (agents submit a moment apart, so one may run while the
    # other waits); round 1's 2 tasks never exceed 2 in all, never meeting the cap; round 2's 4 queue one.
    assert first["in_progress"].max() == 2 and (first.in_progress + first.queue_length).max() == 2
    assert ((second.in_progress == 3) & (second.queue_length == 1)).any()
    assert second["in_progress"].max() == 3
    tasks = pd.read_csv(run_dir / schema.TASKS_CSV)
    assert tasks.groupby("round").size().to_dict() == {1: 2, 2: 4}
    baseline = samples[samples.ts < rounds[0]["start_ts"]]
    assert len(baseline) >= 5 and baseline["in_progress"].max() == 0  # an idle baseline was recorded


def test_spike_at_an_arrival_rate_too_few_agents_can_serve_reports_dropped_arrivals(tmp_path):
    run_dir = tmp_path / "run"
    done = run_locust(
        run_dir,
        "ChatAgent",
        "--load-profile",
        "spike",
        "--base-users",
        "1",
        "--spike-users",
        "10",
        "--settle",
        "2s",
        "--hold",
        "4s",
        "--ramp",
        "0s",
        "--arrival-rate",
        "20",
        "--max-agents",
        "2",
        "--sim-args",
        SIM_TTFT,
        "--threshold",
        "dropped_arrivals count == 0",
    )
    # its top level not delivered (drops over 5 %): the run ends "load not delivered", its threshold failed
    assert done.returncode == exit_codes.LOAD_NOT_DELIVERED, done.stderr[-1500:]
    meta = meta_of(run_dir)
    assert meta["stop_reason"].startswith("load not delivered: at 20 arrivals/s")
    dropped = meta["open_model"]["dropped_arrivals"]
    assert dropped > 0 and meta["open_model"]["first_dropped_ts"] >= meta["open_model"]["start_ts"]
    assert meta["thresholds"][0]["passed"] is False
    # visible: on the console (count, share, first time), in the report's Arrivals, in summary.json
    assert re.search(
        rf"arrivals \(constant\): .* {dropped:,} dropped \(\d+\.\d %, first \d+ s in\)", done.stdout
    )
    report = (run_dir / schema.REPORT_MD).read_text()
    assert "threshold dropped_arrivals count == 0: FAILED" in report.split("## Arrivals")[1]
    summary = json.loads((run_dir / schema.SUMMARY_JSON).read_text())
    assert summary["arrivals"]["dropped"]["count"] == dropped


# Process mode reads PSS once a second while the profile steps 2 agents a second: a reading one step late
# (a starved CPU slows the read of every agent process's smaps; seen on CI) is two agents off the
# prediction, past its one-agent bar. Alone on a quiet machine, with the other timing tests, it lands.
@pytest.mark.parametrize(
    "mode, metric, agent_mib, budget_mib",
    [
        ("inprocess", "target_rss_bytes", 32, 420),
        pytest.param("process", "target_pss_bytes", 128, 1400, marks=pytest.mark.timing),
    ],
)
def test_breakpoint_with_a_memory_budget_stops_itself_near_the_level_the_knobs_predict(
    tmp_path, mode, metric, agent_mib, budget_mib
):
    """Process mode is judged on PSS: summed RSS counts each worker's copy of the parent's pages."""
    run_dir = tmp_path / "run"
    sim = f"--agent-mode {mode} --agent-mib {agent_mib} --first-agent-mib 0 --agent-startup-ms 0"
    done = run_locust(
        run_dir,
        "SessionAgent",
        "--load-profile",
        "breakpoint",
        "--step-users",
        "2",
        "--step-every",
        "1s",
        "--peak-users",
        "60",
        "--sample-interval",
        "0.2",
        "--pss-every",
        "1",
        "--sim-args",
        sim,
        "--threshold",
        f"{metric} max < {budget_mib}MiB abort",
        timeout=120,
    )
    assert done.returncode == exit_codes.THRESHOLD_FAILED, done.stderr[-1500:]
    meta = meta_of(run_dir)
    assert meta["breakpoint"]["threshold"].startswith(f"{metric} max")
    run = load_run(run_dir)
    # Baseline: the gateway warmed up by its first request, less that first agent's knob-set memory.
    first_agent_ts = run.agents.loc[run.agents.event == "created", "ts"].min()
    warm = run.samples[run.samples.ts > first_agent_ts + 0.5][metric].dropna().iloc[0]
    baseline_mib = warm / schema.MIB - agent_mib
    predicted = math.ceil((budget_mib - baseline_mib) / agent_mib)
    broke = breaking_level(run, metric, budget_mib * schema.MIB)
    assert broke is not None and broke.users is not None
    assert abs(broke.users - predicted) <= max(1, 0.1 * predicted), (broke, predicted, baseline_mib)
    assert meta["breakpoint"]["running_users"] >= broke.users  # the stop comes after the break
