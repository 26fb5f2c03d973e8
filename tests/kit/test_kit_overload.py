"""Verdicts under overload and starvation, end to end: an open model asked for more arrivals than one
Locust process can start ends "load not delivered" (exit code 7) at that level, with the delivered count
read back against the simulator's own; a host made busy by CPU hogs marks the run's latency suspect with
the host's reason. Both against a real simulator at 0 ms, through a real Locust run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from contract import schema
from contract.exit_codes import LOAD_NOT_DELIVERED, OK
from tests.locust_runs import run_locust, wait_for

pytestmark = pytest.mark.e2e

LOW, PEAK = 50.0, 3000.0  # arrivals/s: one process starts the first, not the second (~900/s here)
SIM_ZERO = ("--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "2")


def sim_calls(url: str) -> int:
    """The simulator's own count of the model calls it answered."""
    return int(httpx.get(f"{url}/v1/sim/calls", timeout=5).json()["totals"]["calls"])


def test_an_open_model_rate_one_process_cannot_start_is_not_delivered_and_not_held(simulator, tmp_path):
    gateway = simulator(*SIM_ZERO)
    run_dir = tmp_path / "run"
    stages = f"0s:1,4s:1,0s:{PEAK / LOW:g},8s:{PEAK / LOW:g}"  # 4 s at 50/s, then 8 s at 1,500/s
    done = run_locust(
        run_dir,
        "ChatAgent",
        "--host",
        gateway.url,
        "--load-profile",
        "average",
        "--stages",
        stages,
        "--arrival-rate",
        f"{PEAK:g}",
        "--max-agents",
        "200",
    )
    assert done.returncode == LOAD_NOT_DELIVERED, done.stderr[-2000:]
    summary = json.loads((run_dir / schema.SUMMARY_JSON).read_text())
    levels = summary["breaking_level"]
    assert [d["level"] for d in levels["not_delivered"]] == [PEAK], levels
    assert levels["held_up_to"] == LOW < PEAK  # the peak was not delivered, so not held
    assert summary["delivery"]["delivered"] is False and summary["delivery"]["level"] == PEAK
    peak = levels["not_delivered"][0]
    assert peak["achieved_per_s"] < PEAK * 0.95
    # every arrival sent (started on time or late) is one call the simulator answered: within 5 % of its count
    truth = sim_calls(gateway.url)
    sent = summary["arrivals"]["started"] + summary["arrivals"]["late"]["count"]
    assert sent == pytest.approx(truth, rel=0.05), (summary["arrivals"], truth)
    said = f"load not delivered: at {PEAK:g} arrivals/s"
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    assert meta["stop_reason"].startswith(said) and meta["exit_code"] == LOAD_NOT_DELIVERED
    assert said in done.stdout
    assert f"LOAD NOT DELIVERED at {PEAK:g} arrivals/s" in (run_dir / schema.REPORT_MD).read_text()


def test_a_host_busy_with_cpu_hogs_marks_the_latency_suspect_with_the_host_reason(simulator, tmp_path):
    gateway = simulator("--ttft-ms", "20", "--itl-ms", "5", "--output-tokens", "4")
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range((os.cpu_count() or 1) + 1)
    ]
    try:
        wait_for(lambda: all(h.poll() is None for h in hogs), 5, "the hogs to run")
        run_dir = tmp_path / "run"
        done = run_locust(
            run_dir,
            "ChatAgent",
            "--host",
            gateway.url,
            "--load-profile",
            "smoke",
            "--peak-users",
            "2",
            "--duration",
            "8s",
        )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert done.returncode == OK, done.stderr[-2000:]  # suspect figures are words, not an exit code
    validity = json.loads((run_dir / schema.SUMMARY_JSON).read_text())["validity"]
    host = next(c for c in validity["checks"] if c["name"] == "host CPU p90")
    assert host["passed"] is False and host["value"] > host["limit"], validity
    assert validity["suspect"] is True and any(r.startswith("host CPU p90") for r in validity["reasons"])
    suspect = [line for line in done.stdout.splitlines() if line.startswith("LATENCY SUSPECT")]
    assert len(suspect) == 1 and "host CPU p90" in suspect[0], done.stdout[-2000:]
    report = (run_dir / schema.REPORT_MD).read_text()
    assert suspect[0] in report.split("## Load generator")[1]
    assert json.loads((run_dir / schema.RUN_JSON).read_text())["validity"]["reasons"] == validity["reasons"]
