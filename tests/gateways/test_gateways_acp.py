"""ACP over stdio: each simulated agent launches its own agent process; N agents give N processes (the
sampler's command-line selector finds exactly them) whose summed memory reflects the per-process truth,
prompts are timed to the first message chunk, and every process is gone after the run.

Truth: the test agent's --mib (resident ballast per process) and --first-ms (delay to the first chunk).
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from contextlib import ExitStack

import psutil
import pytest

from agents.gateways.acp import AcpAgent
from contract import schema
from sampler.selection import PatternSelector
from tests.gateways.harness import agent_user, rows
from tests.paths import TEST_GATEWAYS

pytestmark = pytest.mark.e2e

AGENT_SCRIPT = TEST_GATEWAYS / "acp_agent.py"
MIB = 30
FIRST_MS = 120
AGENTS = 3


def acp_command(**flags) -> str:
    args = [sys.executable, str(AGENT_SCRIPT), *(f"--{k.replace('_', '-')}={v}" for k, v in flags.items())]
    return shlex.join(args)


def agent_processes() -> list[psutil.Process]:
    found = []
    for child in psutil.Process().children(recursive=True):
        try:
            if str(AGENT_SCRIPT) in " ".join(child.cmdline()):
                found.append(child)
        except psutil.NoSuchProcess:
            continue
    return found


def wait_gone(pids: list[int], timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [
            p for p in alive if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        time.sleep(0.05)
    return alive


def test_n_acp_agents_are_n_processes_holding_their_memory_and_all_are_gone_after(tmp_path):
    tag = f"acp-{os.getpid()}-{tmp_path.name}"  # this test's agents only: others may run beside it
    options = {"acp_command": acp_command(mib=MIB, first_ms=FIRST_MS, tag=tag), "request_timeout": 20.0}
    with ExitStack() as stack:
        users = [stack.enter_context(agent_user(AcpAgent, "", tmp_path, **options)) for _ in range(AGENTS)]
        procs = agent_processes()
        pids = sorted(u.pid for u in users)
        assert sorted(p.pid for p in procs) == pids
        pattern = f"{re.escape(str(AGENT_SCRIPT))}.*{re.escape(tag)}"
        assert sorted(PatternSelector(pattern).pids()) == pids  # what --target-match finds
        rss_mib = sum(p.memory_info().rss for p in procs) / schema.MIB
        assert rss_mib >= AGENTS * MIB * 0.9, rss_mib  # each process holds its ballast resident
        users[0].prompt()
    assert wait_gone(pids) == []
    assert agent_processes() == []
    agents = rows(tmp_path, schema.AGENTS_CSV)
    assert [r["event"] for r in agents].count("created") == AGENTS
    assert [r["event"] for r in agents].count("closed") == AGENTS
    assert len({r["session_id"] for r in agents}) == AGENTS


@pytest.mark.timing
def test_acp_prompt_ttft_reads_back_the_first_chunk_delay_within_50ms(tmp_path):
    options = {"acp_command": acp_command(first_ms=FIRST_MS, chunks=4, chunk_ms=20), "request_timeout": 20.0}
    with agent_user(AcpAgent, "", tmp_path, **options) as user:
        for _ in range(3):
            user.prompt()
    prompts = [r for r in rows(tmp_path, schema.REQUESTS_CSV) if r["operation"] == "acp.prompt"]
    assert len(prompts) == 3 and all(r["ok"] == "1" for r in prompts), prompts
    for row in prompts:
        # 50 ms fixed: a TTFT of the last chunk (the bug it catches) reads 3 x 20 ms + the prompt's end late
        assert abs(float(row["ttft_ms"]) - FIRST_MS) < 50, row
        assert row["chunks"] == "4"
        assert float(row["latency_ms"]) >= FIRST_MS + 3 * 20


def test_acp_agent_that_dies_gives_a_failed_row_not_a_crash(tmp_path):
    options = {"acp_command": f"{sys.executable} -c 'import sys; sys.exit(3)'", "request_timeout": 5.0}
    with agent_user(AcpAgent, "", tmp_path, **options) as user:
        assert user.session_id is None
    init = [r for r in rows(tmp_path, schema.REQUESTS_CSV) if r["operation"] == "acp.initialize"]
    assert init and init[0]["ok"] == "0" and "closed its" in init[0]["error"]
    assert rows(tmp_path, schema.AGENTS_CSV)[0]["event"] == "failed"
