"""Fault suite: a real `locust -f locustfile.py` web UI process signalled during a run started through
its HTTP API (/swarm), and while idle. A run going ends as headless (stop reason naming the signal, whole
rows equal to what the gateway saw, run.json with the exit code, the report), then the process exits
with the signal's code; an idle process exits leaving its finished run untouched. No process is left.
"""

from __future__ import annotations

import signal

import httpx
import pandas as pd
import pytest

from contract import exit_codes, schema
from lifecycle.target import free_port
from tests.browser import answers
from tests.fault_runs import KitProcess, assert_nothing_left, assert_whole_rows, gateway_tasks
from tests.locust_runs import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.e2e]


def web_ui(tmp_path, target: tuple[str, ...], run_id: str) -> tuple[KitProcess, str]:
    """The kit's web UI with task agents on `target` (options naming the gateway); ready to start."""
    port = free_port()
    kit = KitProcess.start(
        tmp_path / "run",
        "TaskAgent",
        *target,
        "--run-id",
        run_id,
        "--poll-interval",
        "0.2",
        "--sample-interval",
        "0.5",
        web_port=port,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(url) or kit.proc.poll() is not None, 60, "the web UI")
        assert kit.proc.poll() is None, kit.stderr[-2000:]
    except AssertionError:
        kit.kill()  # not left running for the tests after this one
        raise
    return kit, url


def start(url: str, **form: str) -> None:
    reply = httpx.post(f"{url}/swarm", data=form, timeout=30).json()
    assert reply["success"], reply


def external(gateway) -> tuple[str, ...]:
    """A simulator the test owns: it can still ask it what it saw after the kit has gone."""
    return ("--host", gateway.url, "--target-pid", str(gateway.pid))


def live_state(url: str) -> str:
    return httpx.get(f"{url}/loadkit/live.json", timeout=5).json()["run"]["state"]


def manual(users: int) -> dict[str, str]:
    return {"load_profile": "manual", "user_count": str(users), "spawn_rate": "10", "run_time": "60s"}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_during_a_web_ui_run_ends_it_as_headless_then_exits(simulator, tmp_path, sig):
    gateway = simulator("--task-seconds", "1.5", "--dispatch-interval", "0.1")
    name = signal.Signals(sig).name
    run_id = f"ui-{name.lower()}"
    kit, url = web_ui(tmp_path, external(gateway), run_id)
    try:
        start(url, **manual(3))
        kit.wait_rows(schema.TASKS_CSV, 2)
        kit.signal(sig)
        code = kit.wait(120)
    finally:
        kit.kill()
    assert code == exit_codes.INTERRUPTED[sig], kit.stderr[-2000:]
    meta = kit.meta()
    assert meta["stop_reason"] == f"interrupted by {name}" and meta["exit_code"] == code
    assert meta["interrupt"]["signals"] == [name] and meta["interrupt"]["forced"] is False
    rows = assert_whole_rows(kit.run_dir)
    made = {task["id"]: task["status"] for task in gateway_tasks(gateway.url, run_id)}
    assert rows[schema.TASKS_CSV] == len(made) > 0, made  # every task made has its row (a killed one too)
    for file_name in ("locust_stats.csv", schema.REPORT_MD, schema.REPORT_HTML):
        assert (kit.run_dir / file_name).stat().st_size > 0, file_name
    assert f"interrupted by {name}" in (kit.run_dir / schema.REPORT_MD).read_text()
    assert not (tmp_path / "run-2").exists()  # the quitting process began no second run
    assert_nothing_left(meta)


def test_a_second_signal_stops_a_web_ui_run_at_once(simulator, tmp_path):
    """SIGTERM twice (Locust's own SIGTERM handler sees both too): every agent stops at once, tasks cut
    short are `unfinished` rows, and the run is recorded once with the first signal's code."""
    gateway = simulator("--task-seconds", "40", "--dispatch-interval", "0.1")
    kit, url = web_ui(tmp_path, external(gateway), "ui-twice")
    try:
        start(url, **manual(3))
        wait_for(lambda: len(gateway_tasks(gateway.url, "ui-twice")) >= 3, 60, "three tasks submitted")
        kit.signal(signal.SIGTERM)
        wait_for(lambda: "again to stop at once" in kit.stderr, 20, "the first signal taken")
        kit.signal(signal.SIGTERM)
        code = kit.wait(120)
    finally:
        kit.kill()
    assert code == exit_codes.INTERRUPTED[signal.SIGTERM], kit.stderr[-2000:]
    meta = kit.meta()
    assert meta["end_ts"] - meta["interrupt"]["first_ts"] < 20  # not the 30 s stop-timeout, nor 40 s tasks
    assert meta["interrupt"]["signals"] == ["SIGTERM", "SIGTERM"] and meta["interrupt"]["forced"] is True
    assert meta["stop_reason"] == "interrupted by SIGTERM; SIGTERM again: stopped at once"
    tasks = pd.read_csv(kit.run_dir / schema.TASKS_CSV)
    assert sorted(tasks["task_id"]) == sorted(t["id"] for t in gateway_tasks(gateway.url, "ui-twice"))
    assert set(tasks["status"]) == {"unfinished"}
    assert kit.stdout.count("exit code: 143") == 1  # one summary: the second shutdown waited for the first
    assert_whole_rows(kit.run_dir)
    assert_nothing_left(meta)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_the_web_ui_is_idle_exits_and_leaves_the_finished_run(tmp_path, sig):
    """On the simulator the kit starts itself: it is stopped with the process too."""
    kit, url = web_ui(tmp_path, ("--sim-args", "--task-seconds 0.3 --dispatch-interval 0.1"), "ui-idle")
    try:
        start(url, load_profile="smoke", duration="3s")
        wait_for(lambda: "stop_reason" in kit.meta(), 90, "the run's end")
        report = kit.run_dir / schema.REPORT_HTML
        wait_for(report.exists, 90, "the run's report")
        wait_for(lambda: live_state(url) == "finished", 90, "the report written")
        record, written = kit.meta(), (kit.run_dir / schema.RUN_JSON).read_bytes()
        kit.signal(sig)
        code = kit.wait(60)
    finally:
        kit.kill()
    meta = kit.meta()
    assert code == meta["exit_code"] == exit_codes.OK, kit.stderr[-2000:]
    # the finished run is untouched, byte for byte (the simulator stopped at exit is the session's)
    assert meta == record and (kit.run_dir / schema.RUN_JSON).read_bytes() == written
    assert meta["stop_reason"] == "profile complete" and meta["target"]["started_by_kit"]
    assert not (tmp_path / "run-2").exists()
    assert "no run is going: quitting" in kit.stderr
    assert_nothing_left(meta)
