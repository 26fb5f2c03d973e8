"""SIGTERM while the load generator makes a large but legitimate workload: 1 M-token prompts whose lognormal
tail reaches the 10 M-token context ceiling (scenarios/ceilings.py), so the text pool is the largest one
a run can make (80 M characters, about 2 s of CPU) and each request carries up to 40 MB. The signal is
sent as the agents spawn, while they make that pool and their first prompts: the run still ends with
143 within its stop-timeout, its record whole.
"""

from __future__ import annotations

import csv
import signal
import time
from pathlib import Path

import pytest

from contract import exit_codes, schema
from scenarios.ceilings import MAX_CONTEXT_TOKENS
from tests.fault_runs import KitProcess, assert_whole_rows
from tests.locust_runs import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.e2e]
STOP_TIMEOUT_S = 10


def csv_column(path: Path, name: str) -> list[str]:
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return [row[name] for row in csv.DictReader(handle)]


def test_sigterm_while_a_million_token_workload_is_made_ends_143_within_the_stop_timeout(simulator, tmp_path):
    gateway = simulator("--ttft-ms", "50", "--itl-ms", "1", "--output-tokens", "4")
    workload = ("--input-tokens", "1000000", "--input-tokens-distribution", "lognormal")
    workload += ("--input-tokens-stdev", "3000000", "--input-tokens-max", str(MAX_CONTEXT_TOKENS))
    kit = KitProcess.start(
        tmp_path / "run",
        *("ChatAgent", "--host", gateway.url, "--load-profile", "manual", "-u", "4", "-r", "4", "-t", "60s"),
        *("--stop-timeout", str(STOP_TIMEOUT_S), "--think-time", "0", *workload),
    )
    try:
        wait_for(lambda: "Ramping to 4 users" in kit.stderr, 60, "the agents spawning")
        signalled_ts = time.time()
        kit.signal(signal.SIGTERM)  # as the first agent makes the pool (about 2 s): before any request
        code = kit.wait(STOP_TIMEOUT_S + 60)
    finally:
        kit.kill()
    assert code == exit_codes.INTERRUPTED[signal.SIGTERM] == 143, kit.stderr[-2000:]
    meta = kit.meta()
    # the pool is made on the event loop: the signal is handled once it is (within its ~2 s), then the stop
    assert meta["end_ts"] - signalled_ts < STOP_TIMEOUT_S, (signalled_ts, meta["interrupt"])
    assert meta["workload"]["input_tokens"].startswith("lognormal mean 1e+06")
    assert_whole_rows(kit.run_dir)
    sent = [float(ts) for ts in csv_column(kit.run_dir / schema.REQUESTS_CSV, "ts")]
    assert all(ts > signalled_ts for ts in sent), (
        "the signal came while the text was made, before any request"
    )
