"""`--request-timeout` is a whole-request deadline through the kit's own command: against a gateway that
sends an SSE comment every 0.5 s and never a token, every request ends at the deadline as a `timeout`
row, the run says its requests failed, and the report is written (no request completed)."""

from __future__ import annotations

import pandas as pd
import pytest

from contract import schema
from contract.exit_codes import REQUEST_ERRORS
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e
DEADLINE_S = 1.5
LATE_BAR_MS = 500  # a loop wake-up past the deadline, never another drip (every 0.5 s)


def test_a_dripping_gateway_gives_timeout_rows_at_the_deadline_and_a_report(tmp_path):
    run_dir = tmp_path / "run"
    load = ("ChatAgent", "--load-profile", "manual", "-u", "2", "-r", "2", "-t", "5s")
    done = run_locust(run_dir, *load, "--sim-args", "--hostile drip", "--request-timeout", str(DEADLINE_S))
    assert done.returncode == REQUEST_ERRORS, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    rows = pd.read_csv(run_dir / schema.REQUESTS_CSV)
    ended = rows[rows["error_kind"] != schema.ERROR_INTERRUPTED]  # the last ones the run's stop cut
    assert len(ended) >= 4 and set(ended["error_kind"]) == {"timeout"}, rows[["error_kind", "latency_ms"]]
    assert ended["latency_ms"].between(DEADLINE_S * 1000, DEADLINE_S * 1000 + LATE_BAR_MS).all()
    assert (run_dir / "report.md").exists() and "report not written" not in done.stderr
