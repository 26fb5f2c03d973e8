"""Capacity and churn on MCP sessions over stdio (`--gateway mcp --mcp-command`), as a user runs them: each
session is a server process of its own (`simgateway.mcp_stdio`), so the memory a session costs is what one
more process adds: a bare server process's RSS (measured here, the same command without the knob) plus
the `--mcp-session-mib` it holds, the truth read back within ±5 %. Every session the driver opened is
closed (its server exited when its stdin closed) and no server process outlives the run; a server that
dies before `initialize` is answered stops the study as a failed start, one line in its rows.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import pandas as pd
import psutil
import pytest

from agents.mcp.stdio import McpStdioSession
from agents.wire.reading import ReadBounds
from analysis import capacity as cap
from analysis import churn as churn_study
from contract import exit_codes, schema
from contract.schema import AGENT, AGENT_EVENT, REQUEST
from tests.agents.test_agents_mcp_stdio import counts, left_running, server_command
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e

SESSION_MIB = 32.0
AGENTS = 10
BARE_SAMPLES = 3


def bare_process_mib(stats: Path) -> float:
    """The RSS of a server process without the knob, once its session is open (initialize and
    notifications/initialized, what the driver's open does): the median of a few processes."""
    readings = []
    for _ in range(BARE_SAMPLES):
        session = McpStdioSession(
            server_command(stats), ReadBounds(30.0, 1 << 20, 1 << 16), {"name": "bare", "version": "1"}
        )
        try:
            assert session.initialize().ok
            session.initialized()
            assert session.request("ping").ok  # notifications/initialized handled before the reading
            assert session.child is not None
            readings.append(psutil.Process(session.child.pid).memory_info().rss / schema.MIB)
        finally:
            session.end()
    return statistics.median(readings)


def driven(run_dir: Path, command: str, *profile: str) -> pd.DataFrame:
    done = run_locust(run_dir, "--gateway", "mcp", "--mcp-command", command, *profile, timeout=240)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    return pd.read_csv(run_dir / schema.CAPACITY_CSV)


def events(run_dir: Path) -> dict[str, int]:
    return pd.read_csv(run_dir / schema.AGENTS_CSV)[AGENT.event].value_counts().to_dict()


def test_capacity_over_stdio_reads_a_bare_process_plus_the_session_mib_within_5pct(tmp_path):
    stats = tmp_path / "stats"
    stats.mkdir()
    bare = bare_process_mib(stats)
    command = server_command(stats, "--mcp-session-mib", f"{SESSION_MIB:g}")
    run_dir = tmp_path / "run"
    frame = driven(run_dir, command, "--load-profile", "capacity", "--max-agents", str(AGENTS))
    result = cap.capacity_result(frame)
    truth = bare + SESSION_MIB
    print(
        f"bare server process {bare:.1f} MiB; marginal {result.marginal_mib:.2f} MiB vs {truth:.2f}, "
        f"R² {result.r2:.3f}, first agent {result.first_agent_mib:.1f} MiB"
    )
    assert result.stop_reason == schema.STOP_CAP and result.agents_ready == AGENTS and result.failures == 0
    assert result.marginal_mib == pytest.approx(truth, rel=0.05), (result.marginal_mib, bare)
    assert result.max_procs == AGENTS and result.duplicate_session_ids == 0
    assert events(run_dir) == {AGENT_EVENT.created: AGENTS, AGENT_EVENT.closed: AGENTS}
    closes = pd.read_csv(run_dir / schema.REQUESTS_CSV).query(f"{REQUEST.operation} == 'mcp.close'")
    assert len(closes) == AGENTS and closes[REQUEST.ok].all()  # each server exited when its stdin closed
    assert len(counts(stats)) == AGENTS + BARE_SAMPLES  # every process wrote its counts at its end
    assert left_running(str(stats)) == []


def test_churn_over_stdio_closes_every_session_and_leaves_no_server_process(tmp_path):
    stats = tmp_path / "stats"
    stats.mkdir()
    run_dir = tmp_path / "run"
    profile = ("--load-profile", "churn", "--churn-cycles", "3", "--churn-batch", "3")
    result = churn_study.churn_result(driven(run_dir, server_command(stats), *profile))
    assert result.sessions_closed == 9, result
    assert events(run_dir) == {AGENT_EVENT.created: 9, AGENT_EVENT.closed: 9}
    servers = counts(stats)  # each process's own count: its one session, handshake and churn prompt
    assert len(servers) == 9
    assert all(s["methods"]["initialize"] == s["methods"]["tools/list"] == 1 for s in servers.values())
    assert left_running(str(stats)) == []
    frame = pd.read_csv(run_dir / schema.CAPACITY_CSV)
    assert (frame.loc[frame["event"] == "closed", "procs"] == 0).all()  # the target empty after each close


def test_a_stdio_server_that_exits_before_initialize_is_a_failed_start_in_one_line(tmp_path):
    run_dir = tmp_path / "run"
    command = f"{sys.executable} -c 'import sys; sys.exit(3)'"
    done = run_locust(run_dir, "--gateway", "mcp", "--mcp-command", command, "--load-profile", "capacity")
    assert done.returncode == exit_codes.REQUEST_ERRORS, done.stderr[-2000:]
    result = cap.capacity_result(pd.read_csv(run_dir / schema.CAPACITY_CSV))
    assert result.stop_reason == schema.STOP_FAILURE and result.failures == 1 and result.agents_ready == 0
    failed = pd.read_csv(run_dir / schema.AGENTS_CSV)
    assert failed[AGENT.event].tolist() == [AGENT_EVENT.failed]
    row = pd.read_csv(run_dir / schema.REQUESTS_CSV).query(f"{REQUEST.operation} == 'mcp.initialize'")
    said = row[REQUEST.error].str.contains("closed its (?:input|output) \\(exit code 3\\)")
    assert len(row) == 1 and said.all(), row[REQUEST.error].tolist()
