"""A spec file is checked against the gateway's first real reply: an id path that finds nothing stops the
run as bad input (exit 2) with one line naming the path and the reply's top-level keys, and no agent
creates anything after that (before, such a run created tasks it never polled or closed, and ended 0).

Truth: the simulator's task board answers POST /v1/tasks with {id, status, submitted_at, tags}; the
spec's id path `task.nothing` is absent from it.
"""

from __future__ import annotations

import subprocess

import pytest

from contract import exit_codes, schema
from tests.gateways.harness import rows
from tests.locust_runs import REPO, locust_command

pytestmark = pytest.mark.e2e
EXAMPLE = REPO / "examples" / "specs" / "simulator-tasks.toml"
USERS = 3


def test_an_id_path_that_finds_nothing_stops_the_run_before_more_is_created(simulator, tmp_path):
    board = simulator("--dispatch-interval", "0.05", "--task-seconds", "0.2")
    spec = tmp_path / "spec.toml"
    text = EXAMPLE.read_text()
    assert '\nid = "id"' in text
    spec.write_text(text.replace('\nid = "id"', '\nid = "task.nothing"'))
    args = ["--gateway", f"spec:{spec}", "--host", board.url, "--load-profile", "smoke"]
    args += ["--peak-users", str(USERS), "--duration", "8s"]
    done = subprocess.run(
        locust_command(tmp_path / "run", *args), cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr[-2000:]
    said = [line for line in done.stderr.splitlines() if "finds nothing" in line]
    assert len(said) == 1 and "'task.nothing'" in said[0], done.stderr[-2000:]
    assert "top-level keys: id, status" in said[0], said
    operations = [r["operation"] for r in rows(tmp_path / "run", schema.REQUESTS_CSV)]
    assert operations.count("task.submit") <= USERS, operations  # those in flight at the first reply
    assert "task.poll" not in operations
