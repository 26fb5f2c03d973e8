"""`--gateway mcp` runs through a real MCP gateway in front of the simulator's MCP endpoint, and the
readings their tests share: the simulator's own counters (the truth behind the gateway), the kit's rows,
and a gateway-side count polled while the run goes on. Not a test module; nothing here is a fixture.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import httpx

from contract import schema
from tests.gateways.harness import rows
from tests.locust_runs import locust_command
from tests.paths import REPO

SIM_TOOLS = ("search", "fetch")
SIM_KNOBS = ["--mcp-preload", "--mcp-tools", ",".join(SIM_TOOLS)]
KEY_ENV = "LOADKIT_TEST_MCP_GATEWAY_KEY"  # the gateway's key, for the kit's --api-key-env


def sim_tool_calls(sim_url: str) -> Counter:
    """tools/call per tool as the simulator itself counted them."""
    return Counter(httpx.get(f"{sim_url}/v1/sim/mcp", timeout=10).json()["tool_calls"])


def mcp_args(host: str, path: str, *extra: str) -> list[str]:
    return ["--gateway", "mcp", "--host", host, "--mcp-url", path, "--api-key-env", KEY_ENV, *extra]


def smoke_args(host: str, path: str, pid: int, *extra: str, agents: int = 4) -> list[str]:
    """A smoke run of `agents` MCP sessions, memory sampled on the gateway's process tree at `pid`."""
    profile = ["--load-profile", "smoke", "--peak-users", str(agents), "--duration", "8s"]
    return mcp_args(host, path, "--target-pid", str(pid), *profile, *extra)


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


def calls_by_tool(run_dir: Path, name_of: Callable[[str], str]) -> tuple[Counter, Counter]:
    """The kit's answered tools/call rows and those the run's end cut short, per backend tool
    (`name_of`: the gateway's tool name to the backend's)."""
    calls = [r for r in rows(run_dir, schema.REQUESTS_CSV) if r["operation"] == "mcp.tools_call"]
    cut = Counter(name_of(r["tool_name"]) for r in calls if r["error_kind"] == schema.ERROR_INTERRUPTED)
    answered = [r for r in calls if r["error_kind"] != schema.ERROR_INTERRUPTED]
    assert answered and all(r["ok"] == "1" for r in answered), [r["error"] for r in answered][:3]
    return Counter(name_of(r["tool_name"]) for r in answered), cut


def assert_server_counted_the_kits_calls(answered: Counter, cut: Counter, served: Counter) -> None:
    """Per tool, the backend ran every call the kit has an answer for; a call cut at the run's end may
    or may not have reached it."""
    assert set(served) <= set(answered) | set(cut), (served, answered)
    for tool in set(answered) | set(cut):
        assert answered[tool] <= served[tool] <= answered[tool] + cut[tool], (tool, answered, cut, served)


def assert_sampled_the_gateway(run_dir: Path, pid: int) -> list[dict]:
    """The run's memory samples are of the gateway's own process tree (processes.csv names its pid)."""
    targets = [r for r in rows(run_dir, schema.PROCESSES_CSV) if r["role"] == "target"]
    assert str(pid) in {r["pid"] for r in targets}, targets
    samples = [r for r in rows(run_dir, schema.SAMPLES_CSV) if r["target_rss_bytes"]]
    assert len(samples) >= 5 and all(int(s["target_rss_bytes"]) > 50 * schema.MIB for s in samples)
    return samples


def session_events(run_dir: Path) -> Counter:
    """agents.csv's session events (created, closed, failed)."""
    return Counter(r["event"] for r in rows(run_dir, schema.AGENTS_CSV))
