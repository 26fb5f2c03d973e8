"""Fault suite: signals to the master of a distributed run (a headless `--master` and one `--worker`
process against the simulator). A first signal stops the fleet gracefully and the worker's in-flight
tasks end as rows on the master; a second stops the worker's agents at once too. No process is left.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pandas as pd
import pytest

from contract import exit_codes, schema
from lifecycle.target import free_port
from tests.fault_runs import KitProcess, alive, assert_nothing_left, assert_whole_rows, gateway_tasks
from tests.locust_runs import LOCUST, csv_rows, wait_for
from tests.paths import REPO

pytestmark = [pytest.mark.faults, pytest.mark.e2e]
WORKER_EXIT_S = 20  # well under the 30 s stop-timeout (locust.conf) a blocked worker would wait


@contextmanager
def fleet(tmp_path, gateway, run_id: str) -> Iterator[tuple[KitProcess, subprocess.Popen]]:
    """A master with two task agents on one worker, for 60 s unless stopped; both killed at the end."""
    port = str(free_port())
    master = KitProcess.start(
        tmp_path / "run",
        "TaskAgent",
        "--master",
        "--master-bind-port",
        port,
        "--expect-workers",
        "1",
        *("--load-profile", "manual", "-u", "2", "-r", "10", "-t", "60s"),
        *("--host", gateway.url, "--target-pid", str(gateway.pid), "--run-id", run_id),
        *("--poll-interval", "0.2", "--sample-interval", "0.5"),
    )
    with open(tmp_path / "worker.log", "w") as log:
        worker = subprocess.Popen(
            [*LOCUST[:-1], "--worker", "--master-port", port], cwd=REPO, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        yield master, worker
    finally:
        master.kill()
        if worker.poll() is None:
            worker.kill()
            worker.wait(10)


def test_a_first_signal_to_the_master_stops_the_fleet_gracefully(simulator, tmp_path):
    gateway = simulator("--task-seconds", "1.5", "--dispatch-interval", "0.1")
    with fleet(tmp_path, gateway, "fleet-once") as (master, worker):
        master.wait_rows(schema.TASKS_CSV, 2, timeout=120)
        master.signal(signal.SIGTERM)
        code = master.wait(120)
        worker.wait(WORKER_EXIT_S)
    assert code == exit_codes.INTERRUPTED[signal.SIGTERM], master.stderr[-2000:]
    meta = master.meta()
    assert meta["stop_reason"] == "interrupted by SIGTERM" and meta["interrupt"]["forced"] is False
    tasks = pd.read_csv(master.run_dir / schema.TASKS_CSV)
    seen = gateway_tasks(gateway.url, "fleet-once")
    assert sorted(tasks["task_id"]) == sorted(t["id"] for t in seen)  # the worker's in-flight tasks too
    assert "unfinished" not in set(tasks["status"])  # they were let finish
    assert_whole_rows(master.run_dir)
    assert_nothing_left(meta)


def test_a_second_signal_to_the_master_stops_the_workers_agents_at_once(simulator, tmp_path):
    gateway = simulator("--task-seconds", "40", "--dispatch-interval", "0.1")
    with fleet(tmp_path, gateway, "fleet-twice") as (master, worker):
        wait_for(lambda: len(gateway_tasks(gateway.url, "fleet-twice")) >= 2, 120, "two tasks submitted")
        master.signal(signal.SIGTERM)
        wait_for(lambda: "again to stop at once" in master.stderr, 20, "the first signal taken")
        master.signal(signal.SIGINT)
        code = master.wait(120)
        worker.wait(WORKER_EXIT_S)
    assert code == exit_codes.INTERRUPTED[signal.SIGTERM], master.stderr[-2000:]
    assert not alive(worker.pid)
    meta = master.meta()
    assert meta["interrupt"]["signals"] == ["SIGTERM", "SIGINT"] and meta["interrupt"]["forced"] is True
    assert meta["stop_reason"] == "interrupted by SIGTERM; SIGINT again: stopped at once"
    assert meta["end_ts"] - meta["interrupt"]["first_ts"] < 20  # not the stop-timeout, nor the 40 s tasks
    tasks = pd.read_csv(master.run_dir / schema.TASKS_CSV)
    seen = gateway_tasks(gateway.url, "fleet-twice")
    assert sorted(tasks["task_id"]) == sorted(t["id"] for t in seen)  # cut short on the worker, reported
    assert set(tasks["status"]) == {"unfinished"}
    assert_whole_rows(master.run_dir)
    assert_nothing_left(meta)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_master_waiting_for_workers_that_never_come_ends_on_a_signal(simulator, tmp_path, sig):
    """--expect-workers 2 and none connects: Locust's wait loop would ignore the stop asked (only SIGKILL
    ended it, run.json without an ending). The signal ends the wait: the signal's code within the
    stop-timeout, run.json ended, the report written."""
    gateway = simulator()
    name = signal.Signals(sig).name
    master = KitProcess.start(
        tmp_path / "run",
        *("ChatAgent", "--master", "--master-bind-port", str(free_port()), "--expect-workers", "2"),
        *("--load-profile", "manual", "-u", "2", "-r", "10", "-t", "60s", "--stop-timeout", "20"),
        *("--host", gateway.url, "--target-pid", str(gateway.pid)),
    )
    try:
        wait_for(lambda: "Waiting for workers to be ready" in master.stderr, 60, "the master waiting")
        signalled = time.monotonic()
        master.signal(sig)
        code = master.wait(60)
        took = time.monotonic() - signalled
    finally:
        master.kill()
    assert code == exit_codes.INTERRUPTED[sig], master.stderr[-2000:]
    assert took < 20, took  # the stop-timeout; the report included
    meta = master.meta()
    assert meta["stop_reason"] == f"interrupted by {name}" and meta["exit_code"] == code
    assert meta["ended_early"] is True and meta["report"]["written"] is True
    assert f"interrupted by {name}" in (master.run_dir / schema.REPORT_MD).read_text()
    assert_nothing_left(meta)


def test_a_signal_to_the_master_while_its_worker_spawns_ends_the_run_with_its_record(simulator, tmp_path):
    """SIGTERM while the worker is still spawning 40 agents at 2/s: the signal's code within the
    stop-timeout, run.json ended, the report written, the worker gone."""
    gateway = simulator("--ttft-ms", "200", "--itl-ms", "20")
    port = str(free_port())
    master = KitProcess.start(
        tmp_path / "run",
        *("ChatAgent", "--master", "--master-bind-port", port, "--expect-workers", "1"),
        *("--load-profile", "manual", "-u", "40", "-r", "2", "-t", "60s", "--stop-timeout", "20"),
        *("--host", gateway.url, "--target-pid", str(gateway.pid)),
    )
    with open(tmp_path / "worker.log", "w") as log:
        worker = subprocess.Popen(
            [*LOCUST[:-1], "--worker", "--master-port", port], cwd=REPO, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        # about 3 s into a 20 s spawn (the master's users.csv counts the users it dispatched, not spawned)
        wait_for(lambda: csv_rows(master.run_dir / schema.USERS_CSV) >= 3, 90, "the worker spawning")
        signalled = time.monotonic()
        master.signal(signal.SIGTERM)
        code = master.wait(60)
        took = time.monotonic() - signalled
        worker.wait(WORKER_EXIT_S)
    finally:
        master.kill()
        if worker.poll() is None:
            worker.kill()
    assert code == exit_codes.INTERRUPTED[signal.SIGTERM] and took < 20, (code, took)
    meta = master.meta()
    assert meta["stop_reason"] == "interrupted by SIGTERM" and meta["report"]["written"] is True
    assert_whole_rows(master.run_dir)
    assert_nothing_left(meta)
