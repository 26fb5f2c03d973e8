"""Fault suite: the kit interrupted by SIGINT, SIGTERM, SIGHUP (once and twice) and SIGKILL, in real
`locust -f locustfile.py --headless` runs against the simulator. Each run ends with its exit code, a
stop reason naming the signal, whole rows equal to what the gateway saw, and no process left behind.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from contract import exit_codes, schema
from tests.fault_runs import (
    KitProcess,
    assert_nothing_left,
    assert_whole_rows,
    gateway_sessions,
    gateway_tasks,
    task_run,
)
from tests.locust_runs import chat_smoke_args, csv_rows, wait_for
from tests.paths import REPO

pytestmark = [pytest.mark.faults, pytest.mark.e2e]
STOP_TIMEOUT_S = 30  # locust.conf's stop-timeout, which these runs inherit


def task_run_on(tmp_path, gateway, run_id: str) -> KitProcess:
    """Task agents on an external simulator the test owns."""
    return task_run(tmp_path, "--host", gateway.url, "--target-pid", str(gateway.pid), "--run-id", run_id)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_the_run_gracefully_with_its_code_and_a_full_record(simulator, tmp_path, sig):
    gateway = simulator("--task-seconds", "1.5", "--dispatch-interval", "0.1")
    name = signal.Signals(sig).name
    kit = task_run_on(tmp_path, gateway, f"sig-{name.lower()}")
    try:
        kit.wait_rows(schema.TASKS_CSV, 2)
        kit.signal(sig)
        code = kit.wait()
    finally:
        kit.kill()
    assert code == exit_codes.INTERRUPTED[sig] == 128 + sig, kit.stderr[-2000:]
    meta = kit.meta()
    assert meta["end_ts"] - meta["interrupt"]["first_ts"] < STOP_TIMEOUT_S  # the load's end, not the report's
    assert meta["stop_reason"] == f"interrupted by {name}" and meta["exit_code"] == code
    assert meta["interrupt"]["signals"] == [name] and meta["interrupt"]["forced"] is False
    rows = assert_whole_rows(kit.run_dir)
    seen = gateway_tasks(gateway.url, f"sig-{name.lower()}")
    assert rows[schema.TASKS_CSV] == len(seen) > 0  # in-flight tasks were let finish, each has its row
    for name_ in ("locust_stats.csv", schema.REPORT_MD, schema.REPORT_HTML):
        assert (kit.run_dir / name_).stat().st_size > 0, name_
    assert f"interrupted by {name}" in (kit.run_dir / schema.REPORT_MD).read_text()
    assert f": interrupted by {name}" in kit.stdout and "profile complete" not in kit.stdout
    assert_nothing_left(meta)


def test_a_second_signal_stops_at_once_and_records_unfinished_tasks(simulator, tmp_path):
    gateway = simulator("--task-seconds", "40", "--dispatch-interval", "0.1")
    kit = task_run_on(tmp_path, gateway, "sig-twice")
    try:
        wait_for(lambda: len(gateway_tasks(gateway.url, "sig-twice")) >= 3, 60, "three tasks submitted")
        kit.signal(signal.SIGTERM)
        wait_for(lambda: "again to stop at once" in kit.stderr, 20, "the first signal taken")
        kit.signal(signal.SIGINT)
        code = kit.wait()
    finally:
        kit.kill()
    assert code == exit_codes.INTERRUPTED[signal.SIGTERM], kit.stderr[-2000:]
    meta = kit.meta()
    assert meta["end_ts"] - meta["interrupt"]["first_ts"] < 20  # not the 30 s stop-timeout, nor 40 s tasks
    assert meta["interrupt"] == {**meta["interrupt"], "signals": ["SIGTERM", "SIGINT"], "forced": True}
    assert meta["stop_reason"] == "interrupted by SIGTERM; SIGINT again: stopped at once"
    tasks = pd.read_csv(kit.run_dir / schema.TASKS_CSV)
    seen = gateway_tasks(gateway.url, "sig-twice")
    assert sorted(tasks["task_id"]) == sorted(t["id"] for t in seen)
    assert set(tasks["status"]) == {"unfinished"} and tasks["error"].notna().all()
    assert {t["status"] for t in gateway_tasks(gateway.url, "sig-twice")} == {"archived"}  # cleaned up
    assert "3 tasks unfinished when the run stopped" in kit.stdout
    assert_whole_rows(kit.run_dir)
    assert_nothing_left(meta)


def test_sigkill_of_the_kit_leaves_whole_rows_and_no_process(tmp_path):
    kit = KitProcess.start(
        tmp_path / "run",
        *chat_smoke_args("60s", "--ttft-ms 50", "--sample-interval", "0.2"),
    )
    try:
        kit.wait_rows(schema.REQUESTS_CSV, 5)
        kit.signal(signal.SIGKILL)
        code = kit.wait()
    finally:
        kit.kill()
    assert code == -signal.SIGKILL
    meta = kit.meta()
    assert "exit_code" not in meta and "stop_reason" not in meta  # nothing claims an ending it did not see
    rows = assert_whole_rows(kit.run_dir)
    assert rows[schema.REQUESTS_CSV] >= 5 and rows[schema.SAMPLES_CSV] > 0
    assert_nothing_left(meta)


@pytest.mark.parametrize(
    ("sig", "group"),
    [(signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["sigint", "ctrl-c-to-the-group", "sigterm"],
)
def test_capacity_interrupted_mid_ramp_closes_every_session_it_created(simulator, tmp_path, sig, group):
    """Ctrl-C (to the kit, or to its whole process group as a terminal sends it) or SIGTERM mid-ramp:
    creation stops, every session the run created is closed on the simulator (its own count), the exit
    code and stop reason name the signal, the report says it was interrupted and projects nothing."""
    gateway = simulator("--agent-mib", "2", "--first-agent-mib", "0", "--agent-startup-ms", "150")
    name = signal.Signals(sig).name
    run_id = f"cap-{name.lower()}"
    kit = KitProcess.start(
        tmp_path / "run",
        "--load-profile",
        "capacity",
        "--host",
        gateway.url,
        "--target-pid",
        str(gateway.pid),
        "--run-id",
        run_id,
        "--memory-budget",
        "8GiB",
        group=group,
    )
    try:
        kit.wait_rows(schema.CAPACITY_CSV, 6)
        ready = csv_rows(kit.run_dir / schema.CAPACITY_CSV) - 1  # rows after the baseline (150 ms each)
        (kit.signal_group if group else kit.signal)(sig)
        code = kit.wait()
    finally:
        kit.kill()
    assert code == exit_codes.INTERRUPTED[sig] == 128 + sig, kit.stderr[-2000:]
    meta = kit.meta()
    assert meta["stop_reason"] == f"interrupted by {name}" and meta["exit_code"] == code
    assert meta["end_ts"] - meta["interrupt"]["first_ts"] < STOP_TIMEOUT_S / 3  # closed, not timed out
    sessions = gateway_sessions(gateway.url, run_id)
    assert 5 <= len(sessions) <= ready + 2  # creation stopped at once: at most the one or two in flight
    assert {s["status"] for s in sessions} == {"closed"}
    agents = pd.read_csv(kit.run_dir / schema.AGENTS_CSV)
    created = agents[agents.event == "created"]
    assert sorted(created.session_id) == sorted(s["id"] for s in sessions)
    assert sorted(agents[agents.event == "closed"].session_id) == sorted(created.session_id)
    capacity = pd.read_csv(kit.run_dir / schema.CAPACITY_CSV)
    assert capacity.iloc[-1]["event"] == "stop" and capacity.iloc[-1]["detail"] == schema.STOP_INTERRUPTED
    assert "stop: interrupted" in kit.stdout
    report = (kit.run_dir / schema.REPORT_MD).read_text()
    assert f"interrupted by {name}" in report and "no projection" in report
    assert "Projection to other budgets" not in report
    assert_nothing_left(meta)


def test_two_quick_ctrl_c_mid_ramp_leave_no_session_open(simulator, tmp_path):
    """Two SIGINTs 50 ms apart to the group mid-ramp (a double Ctrl-C): the second kills the driver,
    mid-create as likely as not; the create in flight lands first, so every session the simulator made
    for the run is closed (its own count), and nothing is named as left open."""
    gateway = simulator("--agent-mib", "2", "--first-agent-mib", "0", "--agent-startup-ms", "150")
    kit = KitProcess.start(
        tmp_path / "run",
        *("--load-profile", "capacity", "--host", gateway.url, "--target-pid", str(gateway.pid)),
        *("--run-id", "cap-twice", "--memory-budget", "8GiB"),
        group=True,
    )
    try:
        kit.wait_rows(schema.CAPACITY_CSV, 6)
        kit.signal_group(signal.SIGINT)
        time.sleep(0.05)  # the gap under test, not a wait for a condition
        kit.signal_group(signal.SIGINT)
        code = kit.wait()
    finally:
        kit.kill()
    assert code == exit_codes.INTERRUPTED[signal.SIGINT], kit.stderr[-2000:]
    meta = kit.meta()
    assert meta["interrupt"]["forced"] is True
    sessions = gateway_sessions(gateway.url, "cap-twice")
    assert len(sessions) >= 5 and {s["status"] for s in sessions} == {"closed"}, sessions
    assert "sessions_left_open" not in meta and "left open on the gateway" not in kit.stderr


def test_a_session_left_open_is_named_with_the_command_that_closes_it(simulator, tmp_path):
    """--no-cleanup keeps the sessions: the console names each one and the kit.cleanup command, and that
    command closes them on the simulator."""
    gateway = simulator("--agent-mib", "1", "--first-agent-mib", "0")
    kit = KitProcess.start(
        tmp_path / "run",
        *("--load-profile", "capacity", "--host", gateway.url, "--target-pid", str(gateway.pid)),
        *("--run-id", "cap-kept", "--memory-budget", "8GiB", "--max-agents", "3", "--no-cleanup"),
    )
    try:
        code = kit.wait()
    finally:
        kit.kill()
    assert code == exit_codes.OK, kit.stderr[-2000:]
    ids = [s["id"] for s in gateway_sessions(gateway.url, "cap-kept")]
    assert len(ids) == 3 and kit.meta()["sessions_left_open"] == ids
    command = f"python -m kit.cleanup {kit.run_dir}"
    named = f"3 session(s) left open on the gateway: {', '.join(ids)}; close them with: {command}"
    assert named in kit.stderr
    subprocess.run([sys.executable, "-m", "kit.cleanup", str(kit.run_dir)], cwd=REPO, check=True, timeout=60)
    assert {s["status"] for s in gateway_sessions(gateway.url, "cap-kept")} == {"closed"}
