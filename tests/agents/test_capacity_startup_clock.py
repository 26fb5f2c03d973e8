"""Capacity start-up is timed where the load generator's own load cannot add to it: against a gateway
whose agents take 40 ms to start, the driver reads what a plain client in a process of its own reads at
the same moments, while 50 streaming agents keep the driver's own process busy.

Truth: a raw client (http.client, a fresh connection per create, as the driver's default) in another
process; the simulator's --agent-startup-ms 40 is what both should read, plus their own transport.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from locust import constant
from locust.env import Environment

from agents.capacity.drivers import CapacityAgent
from agents.gateways.openai_chat import ChatAgent
from agents.run_context import new_context
from agents.settings import AgentSettings
from analysis.capacity import capacity_section
from analysis.load import load_run
from contract import schema
from lifecycle.target import free_port, start_simulator, stop_target
from scenarios.capacity import CapacityParams
from tests.machine_noise import NoiseWindow, Take, judge, retake

pytestmark = pytest.mark.e2e
STARTUP_MS = 40
AGENTS = 40
STREAMS = 50
# The thread shares the interpreter lock with the 50 streams' loop (the process at ~0.93 of a core): it
# read +4.0 to +6.7 ms here (2026-12-02, the same on the landed tree) and +7.7 to +9.9 ms in CI.
BAR_MS = 10.0
CAP_MS = 20.0  # half the error this test exists to catch (the busy host: +40 ms over a raw client)
SIM = f"--agent-startup-ms {STARTUP_MS} --agent-mib 0 --first-agent-mib 0 --ttft-ms 20 --itl-ms 5"
RAW_CLIENT = """
import http.client, json, socket, sys, time
host, port, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
took, end = [], time.monotonic() + seconds
while time.monotonic() < end:
    t0 = time.perf_counter()  # the connect counts, as the driver's fresh connection does
    conn = http.client.HTTPConnection(host, port, timeout=10)
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    headers = {"Content-Type": "application/json", "Connection": "close"}
    conn.request("POST", "/v1/agents", b'{"run_id": "raw"}', headers)
    conn.getresponse().read()
    took.append((time.perf_counter() - t0) * 1000.0)
    conn.close()
    time.sleep(0.02)
print(json.dumps(took))
"""


class DriverAlongside(CapacityAgent):
    fixed_count = 1  # one driver beside the streams


class BusyStream(ChatAgent):
    wait_time = constant(0)


@pytest.fixture
def gateway():
    port = free_port()
    target = start_simulator(port, SIM)
    yield target
    stop_target(target)


def driver_and_raw_startup_ms(target, run_dir: Path) -> tuple[float, float]:
    """Median start-up (ms) the driver read with 50 streams in its process, and the raw client beside."""
    run_dir.mkdir(parents=True, exist_ok=True)  # the kit's session creates it before any agent runs
    env = Environment(user_classes=[DriverAlongside, BusyStream], host=target.url)
    settings = AgentSettings(
        run_id="clock",
        run_dir=run_dir,
        target_pid=(target.pid,),
        capacity=CapacityParams(max_agents=AGENTS),
    )
    new_context(env, settings)
    runner = env.create_local_runner()
    port = target.url.rsplit(":", 1)[1]
    runner.start(STREAMS + 1, spawn_rate=STREAMS + 1)
    time.sleep(1.0)  # the streams running before the driver's timed creates count
    raw = subprocess.Popen(
        [sys.executable, "-c", RAW_CLIENT, "127.0.0.1", port, "4"], stdout=subprocess.PIPE, text=True
    )
    try:
        runner.greenlet.join(timeout=60)
    finally:
        runner.quit()
    raw_ms = json.loads(raw.communicate(timeout=30)[0])
    frame = pd.read_csv(run_dir / schema.CAPACITY_CSV)
    driver_ms = frame.loc[frame["event"] == "ready", "ready_ms"].dropna()
    assert len(driver_ms) == AGENTS and len(raw_ms) >= 20
    assert set(frame["startup_clock"]) == {schema.STARTUP_CLOCK_THREAD}
    notes = capacity_section(load_run(run_dir)).notes
    assert any("dedicated OS thread" in note for note in notes), notes  # the report names the method
    return statistics.median(driver_ms), statistics.median(raw_ms)


@pytest.mark.timing
def test_capacity_start_up_reads_what_a_raw_client_reads_while_50_streams_load_its_process(gateway, tmp_path):
    attempts = iter(range(3))

    def gap_and_bar() -> Take:
        noise = NoiseWindow((gateway.pid,))
        driver, raw = driver_and_raw_startup_ms(gateway, tmp_path / f"run{next(attempts)}")
        noise.close()
        what = f"median start-up, driver {driver:.1f} ms - raw client {raw:.1f} ms"
        return [noise.reading(what, driver - raw, BAR_MS, CAP_MS)]

    assert all(r.passed for r in judge(retake(gap_and_bar)))
