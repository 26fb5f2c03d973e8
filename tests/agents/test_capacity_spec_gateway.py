"""Capacity and churn through a spec file against a REST gateway the kit has never seen
(tests/gateways/rest_sessions.py, paths unlike the simulator's): its knobs and its own counts are the truth.

Known truths: MiB per conversation, first-conversation MiB, start-up sleep (the gateway's own handling
time is the server-side truth), the session at which it refuses, and its count of open conversations.
"""

from __future__ import annotations

import math
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import httpx
import pandas as pd
import pytest

from analysis import capacity as cap
from contract import exit_codes, schema
from lifecycle.target import free_port, start_target, stop_target
from tests.locust_runs import locust_command, run_locust, wait_for
from tests.machine_noise import NoiseWindow, judge, retake
from tests.paths import REPO, TEST_GATEWAYS

pytestmark = pytest.mark.e2e

SERVER = TEST_GATEWAYS / "rest_sessions.py"
SPEC = REPO / "examples" / "specs" / "rest-sessions.toml"
STALL_MS = 40.0  # the delayed-ACK stall a keep-alive client meets on a two-write server (measured here)


@pytest.fixture
def rest_gateway():
    """Factory: `rest_gateway("--session-mib", "4")` -> a running Target; all stopped at teardown."""
    started = []

    def start(*knobs: str):
        port = free_port()
        command = [sys.executable, str(SERVER), "--port", str(port), *knobs]
        target = start_target(command, f"http://127.0.0.1:{port}", "/healthz")
        started.append(target)
        return target

    yield start
    for target in started:
        stop_target(target)


def capacity_args(gateway, run_id: str, *extra: str) -> list[str]:
    return [
        "--gateway",
        f"spec:{SPEC}",
        "--host",
        gateway.url,
        "--target-pid",
        str(gateway.pid),
        "--run-id",
        run_id,
        "--load-profile",
        "capacity",
        *extra,
    ]


def server_stats(gateway, run_id: str | None = None) -> dict:
    query = f"?run={run_id}" if run_id else ""
    return httpx.get(f"{gateway.url}/api/v2/stats{query}", timeout=5).json()


def agent_events(run_dir: Path) -> pd.Series:
    return pd.read_csv(run_dir / schema.AGENTS_CSV)["event"].value_counts()


def test_spec_capacity_reads_back_marginal_first_agent_and_n_max(rest_gateway, tmp_path):
    gateway = rest_gateway("--session-mib", "4", "--first-mib", "40")
    run = tmp_path / "run"
    done = run_locust(run, *capacity_args(gateway, "spec-cap", "--memory-budget", "200MiB"))
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    frame = pd.read_csv(run / schema.CAPACITY_CSV)
    result = cap.capacity_result(frame)
    assert result.stop_reason == schema.STOP_BUDGET and result.failures == 0
    assert result.marginal_mib == pytest.approx(4.0, rel=0.02)
    assert result.first_agent_mib == pytest.approx(44.0, rel=0.05)  # its first block and its own 4
    predicted = math.ceil((200 - result.baseline_mib - 40) / 4) - 1  # largest N with base+40+4N < 200
    assert abs(result.n_max - predicted) <= 1
    assert set(frame["connection"].dropna()) == {"fresh"}
    # cleanup: every conversation the run opened is closed, by the server's own count and agents.csv
    assert server_stats(gateway, "spec-cap")["open"] == 0
    events = agent_events(run)
    assert events["closed"] == events["created"] == result.agents_ready
    assert "None" not in done.stdout and "not recorded MiB" not in done.stdout


def start_up_over_truth(rest_gateway, run: Path, mode: str) -> float:
    """Median start-up the kit read minus the median of the server's own handling time, in ms."""
    gateway = rest_gateway("--session-mib", "1", "--startup-ms", "45")
    args = capacity_args(gateway, run.name, "--max-agents", "20", "--capacity-connection", mode)
    done = run_locust(run, *args)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    polls = pd.read_csv(run / schema.REQUESTS_CSV)["operation"] == "session.ready"
    assert not polls.any()  # the create reply said ready: no poll's round trip in the figure
    ready = pd.read_csv(run / schema.CAPACITY_CSV)["ready_ms"].dropna()
    return statistics.median(ready) - statistics.median(server_stats(gateway)["create_ms"])


@pytest.mark.timing
def test_two_write_gateway_start_up_is_the_servers_own_time(rest_gateway, tmp_path):
    """http.server writes headers and body apart: the default (fresh connection) figure matches the
    server's own handling time within 15 ms (plus the measured scheduling delay); a keep-alive client
    meets the delayed-ACK stall (~40 ms). The create reply already says `ready`, so no poll is sent.
    Measured here: fresh +3.4 to +4.4 ms in quiet phases (the issue's 5 ms), +7 to +15 ms when the shared
    box is busy: one request's own cost under CPU contention, not a stall (docs/capacity.md)."""
    stalls = []

    def fresh_over_truth() -> list:
        noise = NoiseWindow()
        run = tmp_path / f"take-{len(stalls)}"
        fresh = start_up_over_truth(rest_gateway, run / "fresh", "fresh")
        stalls.append(start_up_over_truth(rest_gateway, run / "keep-alive", "keep-alive") - fresh)
        noise.close()
        return [noise.reading("fresh start-up - server's time", fresh, 15.0, STALL_MS / 2)]

    # capped at half the stall the fresh figure must not contain
    assert all(r.passed for r in judge(retake(fresh_over_truth)))
    assert stalls[-1] >= 20.0, stalls  # the server has the artefact: keep-alive pays it


@pytest.mark.timing
def test_a_session_not_ready_at_create_is_polled_until_it_is(rest_gateway, tmp_path):
    """The create reply says `starting`; the conversation turns ready 80 ms later (the server's truth):
    start-up reads at least that, and the 10 ms polls overshoot it by little."""
    gateway = rest_gateway("--session-mib", "1", "--ready-after-ms", "80")
    run = tmp_path / "run"
    done = run_locust(run, *capacity_args(gateway, "polled", "--max-agents", "8"))
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    ready = pd.read_csv(run / schema.CAPACITY_CSV)["ready_ms"].dropna()
    polls = pd.read_csv(run / schema.REQUESTS_CSV).query("operation == 'session.ready'")
    assert len(ready) == 8 and len(polls) >= 8 * 2, len(polls)  # several polls per session
    assert ready.min() >= 80.0 and statistics.median(ready) <= 80.0 + 40.0, list(ready)


def process_mode_run(rest_gateway, run_dir: Path, session_mib: str):
    gateway = rest_gateway("--mode", "process", "--session-mib", session_mib, "--shared-mib", "24")
    args = capacity_args(gateway, f"pps-{session_mib}", "--max-agents", "12", "--capacity-metric", "rss")
    done = run_locust(run_dir, *args)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    assert server_stats(gateway, f"pps-{session_mib}")["open"] == 0
    return done, pd.read_csv(run_dir / schema.CAPACITY_CSV)


def test_process_per_session_rss_warns_with_pss_beside_it(rest_gateway, tmp_path):
    """One forked child per session, holding 16 MiB of its own and sharing the parent's 24 MiB block.
    A forked child also copies some of the parent's pages; a control run with 0 MiB sessions measures
    that overhead, so the known 16 MiB is the difference."""
    _, control = process_mode_run(rest_gateway, tmp_path / "control", "0")
    done, frame = process_mode_run(rest_gateway, tmp_path / "run", "16")
    assert "counts shared pages once per process" in done.stderr
    overhead = cap.capacity_result(control, metric="pss").marginal_mib
    pss = cap.capacity_result(frame, metric="pss")
    rss = cap.capacity_result(frame, metric="rss")
    assert pss.marginal_mib - overhead == pytest.approx(16.0, rel=0.05)
    assert rss.marginal_mib > pss.marginal_mib + 24 * 0.8  # RSS counts the 24 MiB shared block again
    report = (tmp_path / "run" / schema.REPORT_MD).read_text()
    assert "counts shared pages once per process" in report and "PSS at the same step" in report


def test_a_gateway_that_refuses_at_n_projects_nothing(rest_gateway, tmp_path):
    gateway = rest_gateway("--session-mib", "2", "--refuse-at", "9")
    run = tmp_path / "run"
    done = run_locust(run, *capacity_args(gateway, "refused", "--memory-budget", "1GiB"))
    frame = pd.read_csv(run / schema.CAPACITY_CSV)
    result = cap.capacity_result(frame)
    assert result.stop_reason == schema.STOP_FAILURE and result.agents_ready == 8
    assert result.n_max is None
    report = (run / schema.REPORT_MD).read_text()
    assert "Projection" not in report
    assert "Agent 9 failed to start: session.create HTTP 503: " in report
    assert "conversation limit reached" in report
    assert "None" not in done.stdout and "not recorded MiB" not in done.stdout
    assert "N_max not published" in done.stdout
    assert server_stats(gateway, "refused")["open"] == 0


def default_sigint() -> None:
    """Ctrl-C as a terminal delivers it: a test run in the background inherits SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_mid_ramp_closes_every_session_the_run_opened(rest_gateway, tmp_path, sig):
    gateway = rest_gateway("--session-mib", "1", "--startup-ms", "100")
    theirs = httpx.post(
        f"{gateway.url}/api/v2/workspaces/w/conversations", json={"labels": {"loadkit_run": "x"}}, timeout=5
    )
    run = tmp_path / "run"
    args = capacity_args(gateway, "stopped", "--memory-budget", "4GiB")
    proc = subprocess.Popen(
        locust_command(run, *args),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=default_sigint,  # no threads here
    )
    try:
        wait_for(lambda: server_stats(gateway, "stopped")["open"] >= 8, 60, "8 sessions open")
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert server_stats(gateway, "stopped")["open"] == 0, err.decode()[-2000:]
    assert server_stats(gateway, "x")["open"] == 1 and theirs.status_code == 201  # not ours: kept
    events = agent_events(run)
    assert events["closed"] == events["created"] >= 8
    frame = pd.read_csv(run / schema.CAPACITY_CSV)
    assert cap.capacity_result(frame).stop_reason == schema.STOP_INTERRUPTED
    assert cap.capacity_result(frame).n_max is None  # the run's exit code and run.json: branch runend


def test_a_stateless_proxy_is_refused_with_one_line(tmp_path):
    done = run_locust(
        tmp_path / "run", "--gateway", "litellm", "--host", "http://127.0.0.1:9", "--load-profile", "capacity"
    )
    assert done.returncode == exit_codes.BAD_INPUT
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("stateless proxy: no agent session to open and hold idle")
    )
    assert "Traceback" not in done.stderr


def test_a_running_gateway_without_its_processes_named_is_refused(rest_gateway, tmp_path):
    gateway = rest_gateway()
    done = run_locust(
        tmp_path / "run", "--gateway", f"spec:{SPEC}", "--host", gateway.url, "--load-profile", "capacity"
    )
    assert done.returncode == exit_codes.BAD_INPUT and "Traceback" not in done.stderr
    assert "--target-pid" in done.stderr.strip().splitlines()[-1]


def test_cleanup_closes_what_a_killed_run_left_open(rest_gateway, tmp_path):
    gateway = rest_gateway("--session-mib", "1", "--startup-ms", "50")
    httpx.post(
        f"{gateway.url}/api/v2/workspaces/w/conversations", json={"labels": {"loadkit_run": "x"}}, timeout=5
    )
    run = tmp_path / "run"
    args = capacity_args(gateway, "killed", "--memory-budget", "4GiB")
    proc = subprocess.Popen(
        locust_command(run, *args), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_for(lambda: server_stats(gateway, "killed")["open"] >= 6, 60, "6 sessions open")
        proc.kill()  # SIGKILL: no hook runs, nothing is closed
        proc.wait(timeout=10)
    finally:
        proc.kill()
    left = server_stats(gateway, "killed")["open"]
    assert left >= 6
    done = subprocess.run(
        [sys.executable, "-m", "kit.cleanup", str(run)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == exit_codes.OK, done.stderr
    assert server_stats(gateway, "killed")["open"] <= 1  # a create in flight at the kill reached no file
    assert server_stats(gateway, "x")["open"] == 1  # not the run's: kept
    assert agent_events(run)["closed"] >= left - 1
    again = subprocess.run(
        [sys.executable, "-m", "kit.cleanup", str(run)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert again.returncode == exit_codes.OK and "0 session(s) closed" in again.stdout


def test_cleanup_of_a_missing_run_directory_is_one_line(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "kit.cleanup", str(tmp_path / "nope")],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == exit_codes.BAD_INPUT
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
