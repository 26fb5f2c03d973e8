"""`--tags` / `--exclude-tags` on a real run against the simulator preset (chat, task board, idle sessions):
only the agents whose tasks match run, none fails with "No tasks defined", and a filter that leaves no
agent is bad input (one line, exit 2).

Truth: the operations each agent class makes (chat.*, task.*, session.*), read from requests.csv.
"""

from __future__ import annotations

import pandas as pd
import pytest

from contract import exit_codes, schema
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e

SMOKE = ("--load-profile", "smoke", "--peak-users", "3", "--duration", "6s", "--poll-interval", "0.2")


def families(run_dir) -> set[str]:
    operations = pd.read_csv(run_dir / schema.REQUESTS_CSV)["operation"]
    return {op.split(".")[0] for op in operations}


def test_tags_run_only_the_tagged_agents(tmp_path):
    done = run_locust(tmp_path / "run", "--tags", "board", *SMOKE, "--sim-args", "--task-seconds 0.2")
    assert done.returncode == exit_codes.OK, done.stderr[-1500:]
    assert "No tasks defined" not in done.stderr
    assert families(tmp_path / "run") == {"task"}


def test_exclude_tags_drop_those_agents(tmp_path):
    done = run_locust(tmp_path / "run", "--exclude-tags", "sessions", "tasks", *SMOKE)
    assert done.returncode == exit_codes.OK, done.stderr[-1500:]
    assert families(tmp_path / "run") == {"chat"}


def test_tags_matching_no_agent_are_bad_input(tmp_path):
    done = run_locust(tmp_path / "run", "--tags", "no-such-tag", *SMOKE)
    assert done.returncode == exit_codes.BAD_INPUT
    errors = [line for line in done.stderr.splitlines() if line.startswith("loadkit: error:")]
    assert len(errors) == 1 and "no-such-tag" in errors[0] and "Traceback" not in done.stderr, done.stderr
