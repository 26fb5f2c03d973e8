"""End to end: the real simulator with a leak knob, watched by the real sampler, is judged leaking; the
same run without the knob is not. Each agent session closed retains a known MiB in the gateway.
"""

from __future__ import annotations

import time

import pytest

from analysis.load import load_run
from analysis.soak import SoakRule, memory_trend
from sampler.launch import start_sampler, stop_sampler
from sampler.options import SamplerOptions
from simgateway import client
from simgateway.launch import running, wait_for
from tests.synthetic import write_run_dir

pytestmark = pytest.mark.e2e

CYCLES, PERIOD_S = 120, 0.05  # 6 s of create+close, one every 50 ms
# A short run: a steady gateway must not grow 8 MiB in 6 s; the leaking one grows ~240 MiB.
SHORT_RUN_RULE = SoakRule(min_points=20, min_duration_s=3.0, min_slope_per_h=5000.0)


def _churn(url: str) -> None:
    start = time.monotonic()
    for i in range(CYCLES):
        agent_id = client.request(url, "POST", "/v1/agents", {}).json()["id"]
        client.request(url, "DELETE", f"/v1/agents/{agent_id}")
        time.sleep(max(0.0, start + (i + 1) * PERIOD_S - time.monotonic()))


@pytest.mark.parametrize(("retain_mib", "verdict"), [(2.0, "leak"), (0.0, "no evidence of leak")])
def test_simulator_leak_knob_is_judged_leak_and_no_knob_is_not(tmp_path, retain_mib, verdict):
    knobs = [
        "--agent-mib",
        "0",
        "--first-agent-mib",
        "0",
        "--agent-startup-ms",
        "0",
        "--retain-mib-per-closed",
        str(retain_mib),
    ]
    with running(knobs) as gw:
        out = tmp_path / "samples.csv"
        sampler = start_sampler(SamplerOptions(out=str(out), pids=[gw.pid], interval=0.1, duration=30))
        try:
            wait_for(lambda: out.exists() and out.read_text().count("\n") >= 3, 15, "first samples")
            _churn(gw.url)
        finally:
            stop_sampler(sampler)
    run = load_run(write_run_dir(tmp_path, {}))
    trend = memory_trend(run, SHORT_RUN_RULE)
    assert trend.verdict == verdict, trend
    if retain_mib:  # ~2 MiB per 50 ms cycle = 40 MiB/s, within 35 % (request pacing on a busy host)
        assert trend.slope_per_h / 3600 == pytest.approx(retain_mib / PERIOD_S, rel=0.35)
