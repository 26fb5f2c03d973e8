"""The kit with a sampler service on the gateway's "host": the gateway, a target that allocates a known
amount and `python -m sampler serve` in one network namespace, `locust -f locustfile.py` in another.
Also the queue probe with only --host (loopback, no namespaces).

Every load targets only the private addresses of namespaces created here (or 127.0.0.1) and ends by
itself within its --duration."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from analysis import capacity
from contract.exit_codes import BAD_INPUT, OK, THRESHOLD_FAILED
from contract.schema import MIB, SAMPLE_EVENT, STOP_BUDGET
from tests.locust_runs import locust_command, run_locust
from tests.netns import Host, lan
from tests.sampler.support import ALLOCATOR, REPO, Children, read_rows, tell, wait_for

pytestmark = pytest.mark.e2e

TOKEN = "ns-test-token-0123456789"
ENV = {**os.environ, "PYTHONPATH": str(REPO), "LOADKIT_SAMPLER_TOKEN": TOKEN}
GATEWAY_PORT, SAMPLER_PORT = 18080, 9107  # inside private namespaces: no other test can hold them
INTERVAL_S = 0.25
ALLOC_MIB = 200
LABEL = "gateway-host"


@pytest.fixture
def hosts():
    with lan("gw", "lg") as named:
        yield named


@pytest.fixture
def procs(hosts):
    """Processes of the test, all stopped before the namespaces go (fixture order: procs first)."""
    kids = Children()
    yield kids
    kids.stop_all()


def start_simulator(procs: Children, gw: Host, *knobs: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "simgateway", "--port", str(GATEWAY_PORT), "--bind", gw.address, *knobs]
    sim = procs.start(gw.command(argv), env=ENV, stdout=subprocess.PIPE, text=True)
    assert "listening" in sim.stdout.readline()
    return sim


def start_service(procs: Children, gw: Host, target_pid: int) -> subprocess.Popen:
    argv = [sys.executable, "-m", "sampler", "serve", "--bind", gw.address, "--port", str(SAMPLER_PORT)]
    argv += ["--pid", str(target_pid), "--interval", str(INTERVAL_S), "--host-label", LABEL]
    service = procs.start(gw.command(argv), env=ENV, stderr=subprocess.PIPE, text=True)
    assert "listening" in service.stderr.readline()
    return service


def start_gateway_host(procs: Children, gw: Host) -> tuple[subprocess.Popen, subprocess.Popen]:
    """The simulator, the allocating target and the sampler service, all in `gw`; returns (target,
    service) once each says it is ready."""
    start_simulator(procs, gw)
    target = procs.start(gw.command([sys.executable, "-c", ALLOCATOR, str(ALLOC_MIB)]))
    assert target.stdout.readline().strip() == b"ready"
    return target, start_service(procs, gw, target.pid)


def start_kit(procs: Children, lg: Host, gw: Host, run_dir: Path, *extra: str) -> subprocess.Popen:
    gateway, service = f"http://{gw.address}:{GATEWAY_PORT}", f"http://{gw.address}:{SAMPLER_PORT}"
    argv = locust_command(run_dir, "--host", gateway, "--sampler-url", service, *extra)
    log = open(run_dir.parent / "locust.log", "w")  # closed with the process
    return procs.start(lg.command(argv), cwd=REPO, env=ENV, stdout=log, stderr=subprocess.STDOUT)


def remote_rows(run_dir: Path) -> list[dict[str, str]]:
    return [r for r in read_rows(run_dir / "samples.csv") if r["host"] == LABEL and r["target_rss_bytes"]]


@pytest.mark.timing
def test_remote_sampler_reads_a_known_allocation_aligned_and_a_memory_threshold_aborts(
    hosts, procs, tmp_path
):
    target, _ = start_gateway_host(procs, hosts["gw"])
    run_dir = tmp_path / "run"
    kit = start_kit(
        procs,
        hosts["lg"],
        hosts["gw"],
        run_dir,
        "ChatAgent",
        "--peak-users",
        "2",
        "--load-profile",
        "soak",
        "--duration",
        "60s",
        "--trend-min-duration",  # a 60 s soak: its verdict's data rule at 30 s, or it is refused
        "30s",
        "--threshold",
        f"target_rss_bytes max < {ALLOC_MIB // 2}MiB abort",
    )
    wait_for(lambda: len(remote_rows(run_dir)) >= 8, 60, "remote rows before the allocation")
    go_ts = time.time()
    assert tell(target) == "done"
    done_ts = time.time()
    assert kit.wait(90) == THRESHOLD_FAILED, (tmp_path / "locust.log").read_text()[-2000:]
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["stop_reason"].startswith("threshold failed") and meta["exit_code"] == THRESHOLD_FAILED
    assert abs(meta["remote_samplers"][0]["clock"][0]["offset_s"]) < 0.05  # one kernel, one clock

    rows = pd.DataFrame(remote_rows(run_dir)).astype({"ts": float, "target_rss_bytes": float})
    before = rows[rows["ts"] < go_ts]["target_rss_bytes"].median()
    after = rows[rows["ts"] > done_ts + INTERVAL_S]["target_rss_bytes"]
    assert len(after) >= 2, "the final pull must bring the rows up to the stop"
    assert (after.median() - before) == pytest.approx(ALLOC_MIB * MIB, rel=0.05)
    jump_ts = rows[rows["target_rss_bytes"] > before + ALLOC_MIB * MIB / 2]["ts"].min()
    assert go_ts - 0.05 <= jump_ts <= done_ts + INTERVAL_S + 0.05  # aligned within one sample interval


def test_a_killed_sampler_service_is_a_gap_the_run_completes_and_the_report_says_so(hosts, procs, tmp_path):
    _, service = start_gateway_host(procs, hosts["gw"])
    run_dir = tmp_path / "run"
    profile = ("ChatAgent", "--peak-users", "2", "--load-profile", "smoke", "--duration", "12s")
    kit = start_kit(procs, hosts["lg"], hosts["gw"], run_dir, *profile)
    wait_for(lambda: len(remote_rows(run_dir)) >= 4, 60, "remote rows before the kill")
    os.killpg(service.pid, signal.SIGKILL)
    killed_ts = time.time()
    assert kit.wait(90) == OK, (tmp_path / "locust.log").read_text()[-2000:]
    rows = read_rows(run_dir / "samples.csv")
    gaps = [r for r in rows if r["event"].startswith(SAMPLE_EVENT.sampler_gap)]
    assert len(gaps) == 1 and gaps[0]["target_rss_bytes"] == "" and gaps[0]["host"] == LABEL
    assert not [r for r in remote_rows(run_dir) if float(r["ts"]) > killed_ts + 0.05]  # no invented rows
    meta = json.loads((run_dir / "run.json").read_text())
    gap = meta["remote_samplers"][0]["gaps"][0]
    assert gap["end_ts"] is None and gap["start_ts"] <= killed_ts
    report = (run_dir / "report.md").read_text()
    assert "GAPS: 1 span(s) without samples from a sampler service" in report


def test_capacity_through_the_sampler_service_reads_back_agent_mib_within_2_percent(hosts, procs, tmp_path):
    fast = ["--agent-startup-ms", "0", "--ttft-ms", "0", "--itl-ms", "0", "--output-tokens", "2"]
    sim = start_simulator(procs, hosts["gw"], *fast, "--agent-mib", "4", "--first-agent-mib", "50")
    start_service(procs, hosts["gw"], sim.pid)
    run_dir = tmp_path / "run"
    budget = ("--load-profile", "capacity", "--memory-budget", "400MiB")
    kit = start_kit(procs, hosts["lg"], hosts["gw"], run_dir, *budget)
    assert kit.wait(180) == OK, (tmp_path / "locust.log").read_text()[-2000:]
    result = capacity.capacity_result(pd.read_csv(run_dir / "capacity.csv"))
    assert result.stop_reason == STOP_BUDGET and result.failures == 0
    assert result.marginal_mib == pytest.approx(4.0, rel=0.02)


def test_queue_is_recorded_with_only_host(simulator, tmp_path):
    gateway = simulator()
    run_dir = tmp_path / "run"
    done = run_locust(
        run_dir,
        "ChatAgent",
        "--host",
        gateway.url,
        "--load-profile",
        "smoke",
        "--peak-users",
        "2",
        "--duration",
        "6s",
    )
    assert done.returncode == OK, done.stderr[-2000:]
    samples = pd.read_csv(run_dir / "samples.csv")
    assert samples["queue_length"].notna().sum() >= 3
    assert samples["loadgen_cpu_pct"].notna().sum() >= 3  # the saturation check has its readings
    for column in ("target_rss_bytes", "host_available_bytes"):  # not this host's to report
        assert samples[column].isna().all()
    for column in ("host_cpu_pct", "host_run_queue_per_core"):  # the load generator's host: validity reads
        assert samples[column].notna().sum() >= 2, column
    report = (run_dir / "report.md").read_text()
    assert "queue length and in-progress not measured" not in report


def test_an_unreachable_sampler_service_is_bad_input_in_one_line(tmp_path):
    env_token = {"LOADKIT_SAMPLER_TOKEN": TOKEN}
    os.environ.update(env_token)
    try:
        done = run_locust(
            tmp_path / "run", "--sampler-url", "http://127.0.0.1:9", "--duration", "2s", timeout=60
        )
    finally:
        os.environ.pop("LOADKIT_SAMPLER_TOKEN")
    assert done.returncode == BAD_INPUT
    errors = [line for line in done.stderr.splitlines() if line.startswith("loadkit: error:")]
    assert len(errors) == 1 and "sampler service" in errors[0] and "Traceback" not in done.stderr
    assert TOKEN not in done.stderr + done.stdout
