"""Workloads end to end, `locust -f locustfile.py --headless ...` against the simulator, whose token count
(ceil(chars / 4)) and prompt cache are the truth: the asked size is the size the gateway reports, a
spread's percentiles are the distribution's, a shared prefix is cached as the simulator's cache says,
and the same seed draws the same prompts in two runs and across two workers, never the same draw twice.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from contract.exit_codes import OK
from scenarios.workloads.distributions import Distribution
from tests.kit.test_kit_distributed import processes, skip_if_workers_were_lost
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e
FAST_SIM = "--ttft-ms 5 --itl-ms 1 --output-tokens 4"
PREFIX_BLOCK = 16  # tokens per simulator cache block: 64 characters
THINK_S = "0.03"  # ~150 requests/s at 6 agents; at 0 (~400/s) a busy 2-core host saturates the loadgen


def chat_run(run_dir, agents: int, duration: str, *workload: str, sim_args: str = FAST_SIM, extra=()):
    smoke = ("ChatAgent", "--load-profile", "smoke", "--peak-users", str(agents), "--duration", duration)
    done = run_locust(run_dir, *smoke, "--think-time", THINK_S, *workload, "--sim-args", sim_args, *extra)
    return done


def ok_requests(run_dir) -> pd.DataFrame:
    frame = pd.read_csv(run_dir / "requests.csv")
    return frame[(frame["ok"] == 1) & (frame["operation"] == "chat.stream")]


def test_2000_tokens_asked_are_2000_reported_and_a_shared_prefix_is_cached(tmp_path):
    """--input-tokens 2000 with a 1,000-token prefix, the simulator caching 16-token blocks: every request
    reports 2000 ± 3 %; the first the simulator saw found its cache cold, every other one's cached
    tokens are the prefix's whole blocks (plus at most the blocks of the agent tag that follows it)."""
    run_dir = tmp_path / "run"
    sim = f"{FAST_SIM} --prefix-cache-block {PREFIX_BLOCK}"
    done = chat_run(run_dir, 4, "5s", "--input-tokens", "2000", "--prefix-tokens", "1000", sim_args=sim)
    assert done.returncode == OK, done.stderr[-2000:]
    rows = ok_requests(run_dir)
    assert len(rows) > 100 and (rows["asked_tokens_in"] == 2000).all()
    assert rows["tokens_in"].mean() == pytest.approx(2000, rel=0.03)
    assert rows["tokens_in"].between(2000 * 0.97, 2000 * 1.03).all()
    prefix_chars = 4000 - 1  # 1,000 tokens of the pool at 4 characters, its leading space dropped
    block_chars = PREFIX_BLOCK * 4
    tag_chars = len("[agent 1234567-12 run 20261201-000000-abcdef req 99999]")  # the user message opens it
    low = prefix_chars // block_chars * PREFIX_BLOCK
    high = (prefix_chars + 1 + tag_chars) // block_chars * PREFIX_BLOCK
    cold = rows["tokens_cached"] == 0
    assert cold.sum() == 1, rows["tokens_cached"].value_counts()
    assert rows[~cold]["tokens_cached"].between(low, high).all(), rows["tokens_cached"].value_counts()
    report = (run_dir / "report.md").read_text()
    workload = report.split("## Workload", 1)[1].split("\n## ", 1)[0]
    assert "input: fixed 2000" in workload and "shared prefix tokens: 1000" in workload
    assert "warning: the gateway's input tokens" not in workload
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["workload"]["calibration"]["chars_per_token"] == 4.0


LOGNORMAL = (
    "--input-tokens",
    "2000",
    "--input-tokens-stdev",
    "600",
    "--input-tokens-distribution",
    "lognormal",
)


@pytest.fixture(scope="module")
def spread_run(tmp_path_factory):
    """Six agents drawing lognormal input sizes from seed 5, one process."""
    run_dir = tmp_path_factory.mktemp("spread") / "run"
    done = chat_run(run_dir, 6, "6s", *LOGNORMAL, "--seed", "5")
    assert done.returncode == OK, done.stderr[-2000:]
    return run_dir


def test_a_lognormal_spread_reports_the_distributions_percentiles_within_5_percent(spread_run):
    rows = ok_requests(spread_run)
    assert len(rows) > 300
    truth = Distribution("lognormal", 2000, 600)
    reported = np.percentile(rows["tokens_in"], [5, 50, 95])
    for q, value in zip((0.05, 0.5, 0.95), reported, strict=True):
        assert value == pytest.approx(truth.quantile(q), rel=0.05), q
    assert (rows["tokens_in"] - rows["asked_tokens_in"]).abs().max() <= 2  # each one as asked, too


def sequences(run_dir, length: int = 12) -> dict[str, tuple]:
    """Each agent's first asked sizes, in the order it sent them: the fingerprint of its draws."""
    rows = ok_requests(run_dir).sort_values("ts")
    return {agent: tuple(group["asked_tokens_in"][:length]) for agent, group in rows.groupby("agent_id")}


def test_the_same_seed_draws_the_same_prompts_on_two_workers_and_never_one_draw_twice(spread_run, tmp_path):
    """Master + 2 workers with the same seed: worker 0's agents draw what the single process's agents of
    the same numbers drew; worker 1's agents draw sequences nobody else drew."""
    run_dir = tmp_path / "run"
    done = chat_run(run_dir, 4, "6s", *LOGNORMAL, "--seed", "5", extra=processes(2))
    skip_if_workers_were_lost(done)
    assert done.returncode == OK, done.stderr[-2000:]
    alone = {agent.split("-")[1]: seq for agent, seq in sequences(spread_run).items()}
    fleet = sequences(run_dir)
    workers = {agent.split("-")[0] for agent in fleet}
    assert len(workers) == 2 and len(fleet) == 4
    assert len(set(fleet.values())) == 4  # no two agents of the fleet drew alike
    matching = {agent for agent, seq in fleet.items() if seq == alone.get(agent.split("-")[1])}
    assert {agent.split("-")[0] for agent in matching} != workers  # not both workers: distinct streams
    assert len(matching) == 2, (fleet, alone)  # worker 0's two agents are the single run's agents 1, 2
    assert all(len(seq) == 12 for seq in fleet.values())
