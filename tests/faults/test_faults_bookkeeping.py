"""Bookkeeping that matches the gateway: a capacity ramp cut by two SIGINTs 30 ms apart (a double Ctrl-C
to the terminal's process group), tried several times. Each time agents.csv's created and closed rows
are exactly the sessions the simulator made and closed for the run (its own list), and nothing is named
left open when the simulator holds none open. And kit.cleanup after a run whose gateway is gone says
there is nothing to close.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pandas as pd
import pytest

from contract import exit_codes, schema
from kit.cleanup import confirmed_open
from lifecycle.target import free_port
from simgateway import launch
from tests.fault_runs import KitProcess, gateway_sessions
from tests.paths import REPO

pytestmark = [pytest.mark.faults, pytest.mark.e2e]
TRIES = 10  # each ~10-20 s on the shared 2-core host, three at a time
AT_ONCE = 3
GAP_S = 0.03


def double_ctrl_c(tmp_path, n: int) -> str | None:
    """One try; None when the books match, else what differs."""
    with launch.running(
        ["--agent-mib", "2", "--first-agent-mib", "0", "--agent-startup-ms", "150"]
    ) as gateway:
        run_id = f"books-{n}"
        kit = KitProcess.start(
            tmp_path / run_id,
            *("--load-profile", "capacity", "--host", gateway.url, "--target-pid", str(gateway.pid)),
            *("--run-id", run_id, "--memory-budget", "8GiB"),
            group=True,
        )
        try:
            kit.wait_rows(schema.CAPACITY_CSV, 4 + n % 4)  # cut at different steps of the ramp
            kit.signal_group(signal.SIGINT)
            time.sleep(GAP_S)  # the gap under test, not a wait for a condition
            kit.signal_group(signal.SIGINT)
            code = kit.wait()
        finally:
            kit.kill()
        if code != exit_codes.INTERRUPTED[signal.SIGINT]:
            return f"try {n}: exit {code}: {kit.stderr[-1500:]}"
        sessions = gateway_sessions(gateway.url, run_id)
    agents = pd.read_csv(kit.run_dir / schema.AGENTS_CSV)
    created = sorted(agents[agents.event == "created"].session_id)
    closed = sorted(agents[agents.event == "closed"].session_id)
    made = sorted(s["id"] for s in sessions)
    shut = sorted(s["id"] for s in sessions if s["status"] == "closed")
    left = kit.meta().get("sessions_left_open", [])
    still_open = sorted(set(made) - set(shut))
    if created != made or closed != shut or sorted(left) != still_open:
        return f"try {n}: created {created} vs {made}; closed {closed} vs {shut}; left {left} vs {still_open}"
    return None


def test_two_ctrl_c_30ms_apart_leave_books_equal_to_the_gateways(tmp_path):
    with ThreadPoolExecutor(AT_ONCE) as pool:
        problems = [p for p in pool.map(lambda n: double_ctrl_c(tmp_path, n), range(TRIES)) if p]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("gateway_of", ["the-kits-simulator", "a-simulator-since-stopped"])
def test_cleanup_says_the_target_is_gone_when_its_sessions_went_with_it(tmp_path, gateway_of):
    """--no-cleanup leaves sessions open; once their gateway is gone (the run's own simulator, stopped
    with it; or a gateway that no longer answers) kit.cleanup says there is nothing to close, exit 0."""
    kept = ("--load-profile", "capacity", "--max-agents", "2", "--memory-budget", "8GiB", "--no-cleanup")
    if gateway_of == "the-kits-simulator":
        kit = KitProcess.start(tmp_path / "run", *kept)
        code = kit.wait()
    else:
        with launch.running([]) as gateway:
            kit = KitProcess.start(
                tmp_path / "run", *kept, "--host", gateway.url, "--target-pid", str(gateway.pid)
            )
            code = kit.wait()
    assert code == exit_codes.OK, kit.stderr[-2000:]
    own = gateway_of == "the-kits-simulator"  # its sessions go with it: no alarm at the run's end
    assert len(kit.meta()["sessions_gone_with_simulator" if own else "sessions_left_open"]) == 2
    assert ("left open on the gateway" in kit.stderr) is not own
    done = subprocess.run(
        [sys.executable, "-m", "kit.cleanup", str(kit.run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == exit_codes.OK, done.stderr
    assert "the target is gone" in done.stdout and "nothing to close" in done.stdout, done.stdout


def test_left_open_is_only_what_the_gateway_itself_lists_as_open(simulator):
    """Rows that show three sessions open (and one the gateway never made): the simulator lists one
    closed, two open; the check keeps those two. A gateway that does not answer: it cannot say (None)."""
    gateway = simulator()
    run_id = "listed"
    made = [
        httpx.post(f"{gateway.url}/v1/agents", json={"run_id": run_id}, timeout=10).json()["id"]
        for _ in "abc"
    ]
    httpx.delete(f"{gateway.url}/v1/agents/{made[0]}", timeout=10).raise_for_status()
    meta = {"run_id": run_id, "target": {"url": gateway.url, "gateway": "simulator"}}
    assert confirmed_open(meta, [*made, "agent-never-made"]) == made[1:]
    silent = {"run_id": run_id, "target": {"url": f"http://127.0.0.1:{free_port()}", "gateway": "simulator"}}
    assert confirmed_open(silent, made, timeout_s=2) is None
