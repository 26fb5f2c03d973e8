"""The saturation check measures the load generator alone: a run whose agents spawn CPU-burning helper
processes (as the Hermes Kanban agent's `hermes kanban` CLI calls are) while Locust itself idles is valid
and exits 0, and the helpers' CPU is recorded in its own column (never in the load generator's) and in
run.json's validity.

Truth: the double's children burn BURN_S CPU seconds each (tests/fixtures/spawning_agent.py); the
sampler reads the load generator's own and reaped children's CPU from /proc/PID/stat.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from contract import exit_codes, schema
from tests.fixtures.spawning_agent import BURN_S
from tests.locust_runs import REPO, run_locust

pytestmark = pytest.mark.e2e

USERS = 4


def test_helper_cpu_is_recorded_apart_and_does_not_make_the_run_invalid(tmp_path):
    run_dir = tmp_path / "run"
    done = run_locust(
        run_dir,
        "-f",
        f"{REPO / 'locustfile.py'},{REPO / 'tests' / 'fixtures' / 'spawning_agent.py'}",
        "SpawningAgent",
        "--load-profile",
        "smoke",
        "--peak-users",
        str(USERS),
        "--duration",
        "15s",
        "--sample-interval",
        "0.5",
        timeout=180,
    )
    assert done.returncode == exit_codes.OK, done.stderr[-1500:]
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    assert meta["validity"]["valid"] is True, meta["validity"]
    samples = pd.read_csv(run_dir / schema.SAMPLES_CSV).dropna(subset=["loadgen_cpu_pct"])
    wall = samples["ts"].diff().fillna(0)
    helpers_s = float((samples["loadgen_children_cpu_pct"] / 100 * wall).sum())
    own_s = float((samples["loadgen_cpu_pct"] / 100 * wall).sum())
    spawned = len((run_dir / schema.REQUESTS_CSV).read_text().splitlines()) - 1
    assert spawned >= USERS, done.stdout[-1500:]
    # the children's CPU, integrated over the run, is at least what they burnt (BURN_S each, plus the
    # interpreter's start); the last child per agent may end after the sampler's last row
    assert helpers_s >= (spawned - USERS) * BURN_S, (helpers_s, spawned)
    # and it is not in the load generator's own figure (which would then be at least as large)
    assert own_s < helpers_s / 2, (own_s, helpers_s)
    assert meta["validity"]["helpers_cpu_mean"] > 0, meta["validity"]
