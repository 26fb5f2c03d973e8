"""`--gateway mcp` runs through a real MCP gateway in front of the simulator's MCP endpoint, and the
checks their tests share: the simulator's own tools/call counters (the truth behind the gateway) against
the kit's rows, and the gateway's own count of live sessions, polled while the run goes on and read
after it. Not a test module; nothing here is a fixture.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pandas as pd

from analysis import churn as churn_study
from contract import exit_codes, schema
from tests.gateways.harness import rows
from tests.locust_runs import locust_command, run_locust, wait_for
from tests.paths import REPO

SIM_TOOLS = ("search", "fetch")
SIM_KNOBS = ["--mcp-preload", "--mcp-tools", ",".join(SIM_TOOLS)]
BACKEND = "sim"  # the simulator's name on each gateway, which lists its tools as `sim-<tool>`
MIX = f"{BACKEND}-search=2,{BACKEND}-fetch=1"
KEY_ENV = "LOADKIT_TEST_MCP_GATEWAY_KEY"  # the gateway's key, for the kit's --api-key-env
AGENTS = 4
CYCLES, BATCH = 4, 3  # a churn run's cycles and sessions per cycle


@dataclass(frozen=True)
class Sessions:
    """The gateway's own count of a run's live sessions: at most while it went on, and after it."""

    peak: int
    after: int


@dataclass(frozen=True)
class McpGateway:
    """A gateway under test: its origin and MCP path, the pid whose tree is sampled, and its own count
    of the live MCP sessions of a client name (`loadkit-RUN_ID`; a gateway that cannot tell clients
    apart counts all of them)."""

    url: str
    path: str
    pid: int
    sessions: Callable[[str], int]


def sim_mcp(sim_url: str) -> dict:
    """The simulator's own MCP counters (GET /v1/sim/mcp)."""
    return httpx.get(f"{sim_url}/v1/sim/mcp", timeout=10).raise_for_status().json()


def sim_tool_calls(sim_url: str) -> Counter:
    """tools/call per tool as the simulator itself counted them."""
    return Counter(sim_mcp(sim_url)["tool_calls"])


def mcp_args(gateway: McpGateway, *extra: str) -> list[str]:
    """The kit pointed at the gateway, its key from KEY_ENV, memory sampled on the gateway's tree."""
    target = ["--host", gateway.url, "--mcp-url", gateway.path, "--target-pid", str(gateway.pid)]
    return ["--gateway", "mcp", *target, "--api-key-env", KEY_ENV, *extra]


def run_polling(
    run_dir: Path, args: list[str], probe: Callable[[], int], timeout: float = 300
) -> tuple[int, int, str]:
    """The kit run as a user types it, `probe` read every 0.1 s while it goes on: (exit code, the
    probe's peak, stderr's tail). A run past `timeout` is killed (its process group) and fails."""
    with tempfile.TemporaryFile() as err:
        command = locust_command(run_dir, *args)
        proc = subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True
        )
        deadline, peak = time.monotonic() + timeout, 0
        try:
            while proc.poll() is None and time.monotonic() < deadline:
                peak = max(peak, probe())
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        err.seek(0)
        return proc.returncode, peak, err.read().decode(errors="replace")[-3000:]


def calls_by_tool(run_dir: Path) -> tuple[Counter, Counter]:
    """The kit's answered tools/call rows and those the run's end cut short, per backend tool."""
    calls = [r for r in rows(run_dir, schema.REQUESTS_CSV) if r["operation"] == "mcp.tools_call"]
    cut = [r for r in calls if r["error_kind"] == schema.ERROR_INTERRUPTED]
    answered = [r for r in calls if r["error_kind"] != schema.ERROR_INTERRUPTED]
    assert answered and all(r["ok"] == "1" for r in answered), [r["error"] for r in answered][:3]

    def by_tool(chosen: list[dict]) -> Counter:
        return Counter(r["tool_name"].removeprefix(f"{BACKEND}-") for r in chosen)

    return by_tool(answered), by_tool(cut)


def assert_server_counted_the_kits_calls(answered: Counter, cut: Counter, served: Counter) -> None:
    """Per tool, the backend ran every call the kit has an answer for; a call cut at the run's end may
    or may not have reached it."""
    assert set(served) <= set(answered) | set(cut), (served, answered)
    for tool in set(answered) | set(cut):
        assert answered[tool] <= served[tool] <= answered[tool] + cut[tool], (tool, answered, cut, served)


def assert_sampled_the_gateway(run_dir: Path, pid: int) -> None:
    """The run's memory samples are of the gateway's own process tree (processes.csv names its pid)."""
    targets = [r for r in rows(run_dir, schema.PROCESSES_CSV) if r["role"] == "target"]
    assert str(pid) in {r["pid"] for r in targets}, targets
    samples = [r for r in rows(run_dir, schema.SAMPLES_CSV) if r["target_rss_bytes"]]
    assert len(samples) >= 5 and all(int(s["target_rss_bytes"]) > 50 * schema.MIB for s in samples)


def assert_no_key_in(run_dir: Path) -> None:
    """The gateway's key (a JWT, a master key) is in no file of the run directory."""
    key = os.environ[KEY_ENV].encode()
    assert not [p.name for p in run_dir.rglob("*") if p.is_file() and key in p.read_bytes()]


def session_events(run_dir: Path) -> Counter:
    """agents.csv's session events (created, closed, failed)."""
    return Counter(r["event"] for r in rows(run_dir, schema.AGENTS_CSV))


def smoke_through(gateway: McpGateway, sim_url: str, run_dir: Path) -> Sessions:
    """A smoke run of AGENTS sessions by the tool mix: it passes, the simulator ran every call the kit
    has a row for, and the gateway keeps no session open on the simulator after it; the gateway's own
    count of the run's sessions is returned (the test's truth: AGENTS while it went on, none after)."""
    before = sim_tool_calls(sim_url)
    run_id = f"mcp-gw-{secrets.token_hex(4)}"
    client = f"loadkit-{run_id}"  # every session's client name (agents/mcp/agent.py)
    profile = ["--load-profile", "smoke", "--peak-users", str(AGENTS), "--duration", "8s"]
    args = mcp_args(gateway, *profile, "--mcp-tool-mix", MIX, "--run-id", run_id)
    code, peak, stderr = run_polling(run_dir, args, lambda: gateway.sessions(client))
    assert code == exit_codes.OK, stderr
    answered, cut = calls_by_tool(run_dir)
    assert set(answered) == set(SIM_TOOLS) and sum(answered.values()) >= 10, answered
    assert_server_counted_the_kits_calls(answered, cut, sim_tool_calls(sim_url) - before)
    after = gateway.sessions(client)
    wait_for(lambda: sim_mcp(sim_url)["sessions"]["open"] == 0, 10, "the gateway's backend sessions closed")
    assert session_events(run_dir) == {"created": AGENTS, "closed": AGENTS}
    assert_sampled_the_gateway(run_dir, gateway.pid)
    assert_no_key_in(run_dir)
    calls = pd.read_csv(run_dir / schema.REQUESTS_CSV).query("operation == 'mcp.tools_call' and ok == 1")
    print(f"{len(calls)} calls through the gateway, p50 {calls['latency_ms'].median():.1f} ms")
    return Sessions(peak, after)


def churn_through(gateway: McpGateway, run_dir: Path) -> tuple[int, int]:
    """A churn run of CYCLES x BATCH sessions: it passes and every close (the DELETE) answered 200;
    (sessions the churn study counts closed, sessions of the run the gateway holds after it)."""
    run_id = f"mcp-churn-{secrets.token_hex(4)}"
    churn = ["--load-profile", "churn", "--churn-cycles", str(CYCLES), "--churn-batch", str(BATCH)]
    args = mcp_args(gateway, *churn, "--run-id", run_id)
    done = run_locust(run_dir, *args, timeout=300)
    assert done.returncode == exit_codes.OK, done.stderr[-3000:]
    result = churn_study.churn_result(pd.read_csv(run_dir / schema.CAPACITY_CSV))
    closes = [r for r in rows(run_dir, schema.REQUESTS_CSV) if r["operation"] == "mcp.close"]
    assert len(closes) == CYCLES * BATCH and {(r["ok"], r["status_code"]) for r in closes} == {("1", "200")}
    print(f"churn through the gateway: {result.verdict}")
    return result.sessions_closed, gateway.sessions(f"loadkit-{run_id}")


def cleanup_through(gateway: McpGateway, run_dir: Path) -> tuple[int, int]:
    """A run that keeps its sessions (`--no-cleanup`), then `python -m kit.cleanup RUN_DIR` (the gateway
    from run.json; it closes at the default `/mcp` path): the gateway's count of the run's sessions left
    by the run and left after the cleanup."""
    run_id = f"mcp-left-{secrets.token_hex(4)}"
    client = f"loadkit-{run_id}"
    profile = ["--load-profile", "smoke", "--peak-users", str(AGENTS), "--duration", "4s"]
    done = run_locust(run_dir, *mcp_args(gateway, *profile, "--run-id", run_id, "--no-cleanup"), timeout=300)
    assert done.returncode == exit_codes.OK, done.stderr[-3000:]
    left = gateway.sessions(client)
    command = [sys.executable, "-m", "kit.cleanup", str(run_dir), "--api-key-env", KEY_ENV]
    cleaned = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert cleaned.returncode == exit_codes.OK, cleaned.stderr
    assert session_events(run_dir) == {"created": AGENTS, "closed": AGENTS}
    return left, gateway.sessions(client)
