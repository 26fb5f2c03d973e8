"""A distributed run that loses workers never ends "complete": a master with two workers, one SIGKILLed
mid-run (the run goes on with the other and ends with exit code 7, the loss in run.json, report, console);
both frozen by SIGSTOP (Locust marks them missing after 3 s without a heartbeat: the run stops at once, exit
6); a rounds run that loses a worker stops at once with the round that cannot finish named.

Real Locust master and workers, real simulator; a worker goes missing deterministically (SIGKILL, SIGSTOP)
rather than by the spawn-message cost that made them go missing on a busy machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest

from contract import schema
from contract.exit_codes import LOAD_NOT_DELIVERED
from lifecycle.target import free_port
from tests.locust_runs import LOCUST, REPO, locust_command
from tests.sampler.support import Children, read_rows, wait_for

pytestmark = pytest.mark.e2e
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture
def procs():
    kids = Children()
    yield kids
    kids.stop_all()


def start_fleet(procs: Children, run_dir, tmp_path, *profile: str) -> tuple[subprocess.Popen, list]:
    """A master expecting two workers, and the two workers, on a port of this test's own."""
    port = str(free_port())
    master = locust_command(run_dir, "--master", "--master-bind-port", port, "--expect-workers", "2")
    log = open(tmp_path / "master.log", "w")  # closed with the process
    kit = procs.start([*master, *profile], cwd=REPO, env=ENV, stdout=log, stderr=subprocess.STDOUT)
    worker = [*LOCUST[:-1], "--worker", "--master-port", port]  # LOCUST ends with --headless
    workers = [procs.start(worker, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL) for _ in range(2)]
    return kit, workers


def rows_of(run_dir, pid: int) -> int:
    return sum(1 for r in read_rows(run_dir / schema.REQUESTS_CSV) if r["agent_id"].startswith(f"{pid}-"))


def master_log(tmp_path) -> str:
    return (tmp_path / "master.log").read_text()


SMOKE = ("ChatAgent", "--load-profile", "smoke", "--peak-users", "4", "--sim-args", "--ttft-ms 20")


def test_a_worker_killed_mid_run_ends_the_run_with_exit_6_and_says_when_and_how_many_agents(procs, tmp_path):
    run_dir = tmp_path / "run"
    kit, workers = start_fleet(procs, run_dir, tmp_path, *SMOKE, "--duration", "20s")
    victim, survivor = workers[0].pid, workers[1].pid
    wait_for(lambda: rows_of(run_dir, victim) >= 5 and rows_of(run_dir, survivor) >= 1, 120, "rows of both")
    os.kill(victim, signal.SIGKILL)
    kept = rows_of(run_dir, victim)
    assert kit.wait(300) == LOAD_NOT_DELIVERED, master_log(tmp_path)[-2000:]
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    [loss] = meta["workers_lost"]
    assert loss["how"] == "went missing" and loss["agents"] == 2, loss  # 4 agents over 2 workers
    assert 0 < loss["at_s"] < meta["end_ts"] - meta["start_ts"]
    why = meta["stop_reason"]
    assert meta["exit_code"] == LOAD_NOT_DELIVERED and why.startswith("load not delivered: ")
    assert "went missing" in why and "the run went on with the workers left" in why
    assert meta["ended_early"] is False  # the profile ran to its end, on the worker left
    assert rows_of(run_dir, victim) >= kept and rows_of(run_dir, survivor) > 0  # its rows are kept
    out = master_log(tmp_path)
    assert "WORKER LOST: worker" in out and "with 2 agent(s)" in out
    assert f"exit code: {LOAD_NOT_DELIVERED}" in out
    report = (run_dir / schema.REPORT_MD).read_text()
    assert "worker lost" in report and "Load not delivered: worker" in report


def test_a_run_whose_workers_all_go_missing_stops_at_once_with_exit_6(procs, tmp_path):
    run_dir = tmp_path / "run"
    kit, workers = start_fleet(procs, run_dir, tmp_path, *SMOKE, "--duration", "60s")
    wait_for(lambda: any(int(r["users"]) > 0 for r in read_rows(run_dir / schema.USERS_CSV)), 120, "spawn")
    for worker in workers:
        os.kill(worker.pid, signal.SIGSTOP)  # frozen: no heartbeat, as a starved worker
    assert kit.wait(120) == LOAD_NOT_DELIVERED, master_log(tmp_path)[-2000:]
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    assert len(meta["workers_lost"]) == 2 and {w["how"] for w in meta["workers_lost"]} == {"went missing"}
    assert meta["stop_reason"].startswith("load not delivered: ") and "worker" in meta["stop_reason"]
    assert meta["end_ts"] - meta["start_ts"] < 40  # stopped, not run to the profile's 60 s
    assert meta["exit_code"] == LOAD_NOT_DELIVERED
    assert f"exit code: {LOAD_NOT_DELIVERED}" in master_log(tmp_path)


def test_a_rounds_run_that_loses_a_worker_stops_at_once_naming_the_round_that_cannot_finish(procs, tmp_path):
    port = free_port()
    sim = [sys.executable, "-m", "simgateway", "--port", str(port), "--task-seconds", "30"]
    gateway = procs.start(sim, env=ENV, stdout=subprocess.PIPE, text=True)
    assert "listening" in gateway.stdout.readline()
    run_dir = tmp_path / "run"
    rounds = ("TaskAgent", "--load-profile", "rounds", "--rounds", "2,4", "--baseline", "1s")
    target = ("--host", f"http://127.0.0.1:{port}", "--poll-interval", "0.2")
    kit, workers = start_fleet(procs, run_dir, tmp_path, *rounds, *target)
    tasks = f"http://127.0.0.1:{port}/v1/tasks"
    wait_for(lambda: len(httpx.get(tasks, timeout=5).json()["data"]) >= 2, 120, "round 1's two tasks")
    os.kill(workers[0].pid, signal.SIGKILL)  # its round-1 task (30 s) never reports finished
    assert kit.wait(120) == LOAD_NOT_DELIVERED, master_log(tmp_path)[-2000:]
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    why = meta["stop_reason"]
    assert why.startswith("load not delivered: round 1 cannot finish: worker"), why
    assert meta["ended_early"] is True and len(meta["workers_lost"]) == 1
    assert meta["end_ts"] - meta["start_ts"] < 25  # at once, not after the round's 30 s tasks
