"""The serial capacity and churn drivers against the simulator: its knobs are the truth read back."""

from __future__ import annotations

import math
from argparse import Namespace
from pathlib import Path

import pandas as pd
import pytest
from locust.env import Environment

from agents.capacity.drivers import CapacityAgent, ChurnAgent
from agents.run_context import new_context
from agents.settings import AgentSettings
from analysis import capacity as cap
from analysis import churn as churn_study
from contract import schema
from lifecycle.target import free_port, start_simulator, stop_target
from scenarios.options import read_options

pytestmark = pytest.mark.e2e

FAST = ["--agent-startup-ms", "0", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "2"]


@pytest.fixture
def simulator():
    """Start a simulator with the given knobs; every one started is stopped (process group killed)."""
    started = []

    def start(*knobs: str):
        port = free_port()
        target = start_simulator(port, " ".join([*FAST, *knobs]))
        started.append(target)
        return target

    yield start
    for target in started:
        stop_target(target)


def drive(
    agent_class,
    target,
    run_dir: Path,
    timeout_s: float = 90.0,
    gateway: str = "simulator",
    settings: dict | None = None,
    **options,
) -> pd.DataFrame:
    """Run one driver user in a real Locust LocalRunner until it stops the run; capacity.csv as a frame.
    `settings`: more of the agents' settings (`mcp_url`); `options`: the profile's, as typed."""
    profile = read_options(Namespace(**options))
    env = Environment(user_classes=[agent_class], host=target.url)
    agent_settings = AgentSettings(
        run_id="test-run",
        run_dir=run_dir,
        target_pid=(target.pid,),
        gateway=gateway,
        capacity=profile.capacity,
        churn=profile.churn,
        **(settings or {}),
    )
    new_context(env, agent_settings)
    runner = env.create_local_runner()
    try:
        runner.start(1, spawn_rate=1)
        runner.greenlet.join(timeout=timeout_s)
        assert runner.state in ("stopped", "stopping") or runner.greenlet.dead, "driver did not stop the run"
    finally:
        runner.quit()
    return pd.read_csv(run_dir / schema.CAPACITY_CSV)


def test_capacity_reads_back_agent_mib_first_agent_and_n_max(simulator, tmp_path):
    target = simulator("--agent-mib", "4", "--first-agent-mib", "100")
    frame = drive(CapacityAgent, target, tmp_path, memory_budget="1GiB")
    result = cap.capacity_result(frame)
    assert result.stop_reason == schema.STOP_BUDGET and result.failures == 0
    assert result.marginal_mib == pytest.approx(4.0, rel=0.05)
    assert result.r2 >= 0.95
    assert result.first_agent_mib == pytest.approx(100.0, rel=0.10)
    # the knobs' prediction from the measured baseline: largest N with base + 100 + 4 N < 1024 MiB
    predicted = math.ceil((1024 - result.baseline_mib - 100) / 4) - 1
    assert result.n_max == pytest.approx(predicted, rel=0.02)
    assert result.duplicate_session_ids == 0 and result.agents_ready == result.n_stop


def test_capacity_stops_at_the_agent_cap_without_a_capacity_value(simulator, tmp_path):
    target = simulator("--agent-mib", "1", "--first-agent-mib", "1")
    frame = drive(CapacityAgent, target, tmp_path, max_agents="12")
    result = cap.capacity_result(frame)
    assert result.stop_reason == schema.STOP_CAP and result.agents_ready == 12
    assert result.n_max is None


def test_capacity_start_up_failure_is_recorded_and_yields_no_capacity(simulator, tmp_path):
    target = simulator("--agent-mib", "1", "--fail-agent-at", "6")
    frame = drive(CapacityAgent, target, tmp_path)
    result = cap.capacity_result(frame)
    assert result.stop_reason == schema.STOP_FAILURE
    assert result.failures == 1 and result.agents_ready == 5
    assert result.n_max is None
    assert "failed" in str(frame.loc[frame["event"] == "failed", "detail"].iloc[0]).lower()


OVERHEAD_SPREAD_MIB = 0.75


def process_mode_run(simulator, run_dir: Path, agent_mib: str) -> pd.DataFrame:
    target = simulator(
        "--agent-mode", "process", "--agent-mib", agent_mib, "--first-agent-mib", "20", "--shared-mib", "32"
    )
    run_dir.mkdir()
    return drive(CapacityAgent, target, run_dir, memory_budget="1GiB", capacity_metric="pss", max_agents="30")


def test_capacity_process_mode_pss_reads_back_agent_mib_where_summed_rss_over_counts(simulator, tmp_path):
    # A forked worker costs its agent block plus its own private pages (2.6-3.3 MiB of copied Python
    # state here, run to run); a control run with a 0 MiB block measures that overhead, so the knob is the
    # difference, within the overhead's own spread between two runs (0.7 MiB; 3.69 read once in CI).
    control = cap.capacity_result(process_mode_run(simulator, tmp_path / "control", "0"))
    frame = process_mode_run(simulator, tmp_path / "agents", "4")
    pss = cap.capacity_result(frame)
    rss = cap.capacity_result(frame, metric="rss")
    assert pss.metric == "pss" and pss.r2 >= 0.95
    assert pss.marginal_mib - control.marginal_mib == pytest.approx(4.0, abs=OVERHEAD_SPREAD_MIB)
    # each worker's RSS counts the 32 MiB shared block (and the parent's pages) again; PSS does not
    assert rss.marginal_mib > pss.marginal_mib + 32 * 0.9
    assert pss.marginal_mib < 4.0 + 32 * 0.25  # its own pages (2.6-3.3 MiB measured), never the 32 shared


def test_churn_reads_back_retained_mib_per_closed_session(simulator, tmp_path):
    target = simulator("--agent-mib", "4", "--retain-mib-per-closed", "2")
    frame = drive(ChurnAgent, target, tmp_path, churn_cycles="8", churn_batch="5")
    result = churn_study.churn_result(frame)
    assert result.retained_mib_per_session == pytest.approx(2.0, rel=0.10)
    assert result.verdict.startswith("retains")
    assert result.sessions_closed == 40


def test_churn_without_retention_reports_none(simulator, tmp_path):
    target = simulator("--agent-mib", "4", "--retain-mib-per-closed", "0")
    frame = drive(ChurnAgent, target, tmp_path, churn_cycles="8", churn_batch="5")
    result = churn_study.churn_result(frame)
    assert result.verdict.startswith("no retention"), result.verdict
    assert result.returned_mib_per_session == pytest.approx(4.0, rel=0.10)
