"""A bad --session-policy is bad input: one line on stderr, exit 2, no traceback, before any load."""

from __future__ import annotations

import pytest

from contract import exit_codes
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e


def test_bad_session_policy_is_one_line_and_exit_2(tmp_path):
    done = run_locust(tmp_path / "run", "--session-policy", "0", "-t", "2s", timeout=60)
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr[-800:]
    assert "sticky, fresh or a whole number" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()
