"""Fault suite: the target killed (SIGKILL) or frozen (SIGSTOP), started by the kit or running already
(--host + --target-pid), and the side sampler killed. Real `locust -f locustfile.py --headless` runs:
each asserts the exit code, the stop reason, one row per task the gateway accepted (in-flight ones
`unfinished`), what the report says is missing, and that nothing the kit started is left running.
"""

from __future__ import annotations

import os
import signal

import pandas as pd
import pytest

from contract import exit_codes, schema
from tests.fault_runs import KitProcess, assert_nothing_left, assert_whole_rows, freeze, task_run, thaw
from tests.locust_runs import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.e2e]
SIM_KNOBS = "--task-seconds 20 --dispatch-interval 0.1"  # tasks still running when the target goes
LIVENESS_S = 3.0


def target_run(tmp_path, *target: str) -> KitProcess:
    return task_run(tmp_path, "--liveness-timeout", str(LIVENESS_S), *target)


def assert_tasks_recorded(kit: KitProcess) -> pd.DataFrame:
    """One tasks.csv row per task the gateway accepted; those cut off by the target's end `unfinished`."""
    requests = pd.read_csv(kit.run_dir / schema.REQUESTS_CSV)
    accepted = ((requests.operation == "task.submit") & (requests.ok == 1)).sum()
    tasks = pd.read_csv(kit.run_dir / schema.TASKS_CSV)
    assert len(tasks) == accepted >= 3
    assert set(tasks.status) == {"unfinished"}
    assert f"{len(tasks)} tasks unfinished when the run stopped" in kit.stdout
    return tasks


def wait_for_running_tasks(kit: KitProcess) -> None:
    def submitted() -> int:
        try:
            frame = pd.read_csv(kit.run_dir / schema.REQUESTS_CSV)
        except (OSError, pd.errors.EmptyDataError):
            return 0
        return int((frame.operation == "task.poll").sum())

    wait_for(lambda: submitted() >= 6, 60, "tasks being polled")


def kit_target(kit: KitProcess) -> int:
    wait_for(lambda: (kit.run_dir / schema.RUN_JSON).exists(), 60, "run.json")
    return kit.meta()["target"]["pid"]


@pytest.mark.parametrize("fault", ["kill", "freeze"])
def test_a_kit_started_target_that_dies_or_freezes_ends_the_run_with_exit_3(tmp_path, fault):
    kit = target_run(tmp_path, "--sim-args", SIM_KNOBS)
    try:
        wait_for_running_tasks(kit)
        pid = kit_target(kit)
        if fault == "kill":
            os.killpg(pid, signal.SIGKILL)
        else:
            freeze(pid)
        code = kit.wait()
    finally:
        kit.kill()
    assert code == exit_codes.TARGET_DIED, kit.stderr[-2000:]
    meta = kit.meta()
    assert meta["stop_reason"].startswith("target ") and meta["exit_code"] == code
    if fault == "freeze":
        assert f"for {LIVENESS_S:g} s" in meta["stop_reason"] and "stopped (SIGSTOP)" in meta["stop_reason"]
    assert_tasks_recorded(kit)
    assert_whole_rows(kit.run_dir)
    assert "unfinished" in (kit.run_dir / schema.REPORT_MD).read_text()
    assert_nothing_left(meta)  # a frozen target is killed too


@pytest.mark.parametrize("fault", ["kill", "freeze"])
def test_an_external_target_that_dies_or_freezes_ends_the_run_with_exit_3(simulator, tmp_path, fault):
    gateway = simulator(*SIM_KNOBS.split())
    kit = target_run(tmp_path, "--host", gateway.url, "--target-pid", str(gateway.pid))
    try:
        wait_for_running_tasks(kit)
        if fault == "kill":
            gateway.proc.kill()
        else:
            freeze(gateway.pid)
        code = kit.wait()
    finally:
        thaw(gateway.pid)
        kit.kill()
    assert code == exit_codes.TARGET_DIED, kit.stderr[-2000:]
    meta = kit.meta()
    assert "target" in meta["stop_reason"] and meta["exit_code"] == code
    expected = "is gone" if fault == "kill" else f"not healthy at {gateway.url}/health for {LIVENESS_S:g} s"
    assert expected in meta["stop_reason"] or "seen by the sampler" in meta["stop_reason"]
    assert_tasks_recorded(kit)
    assert_whole_rows(kit.run_dir)
    assert_nothing_left(meta)


def test_a_killed_sampler_is_recorded_where_samples_stop_and_its_thresholds_are_not_judged(tmp_path):
    kit = KitProcess.start(
        tmp_path / "run",
        "ChatAgent",
        "--load-profile",
        "smoke",
        "--peak-users",
        "2",
        "--duration",
        "10s",
        "--sample-interval",
        "0.2",
        "--threshold",
        "target_rss_bytes max < 10GiB",
        "--threshold",
        "latency_ms p95 < 60s",
    )
    try:
        kit.wait_rows(schema.SAMPLES_CSV, 5)
        sampler = kit.meta()["sampler"]["pid"]
        os.kill(sampler, signal.SIGKILL)
        code = kit.wait()
    finally:
        kit.kill()
    # the run completed its profile, but a threshold asked for could not be judged: that fails it
    assert code == exit_codes.THRESHOLDS_UNJUDGED, kit.stderr[-2000:]
    meta = kit.meta()
    assert meta["stop_reason"] == "profile complete" and meta["exit_code"] == exit_codes.THRESHOLDS_UNJUDGED
    samples = pd.read_csv(kit.run_dir / schema.SAMPLES_CSV)
    stopped = meta["sampler"]
    assert stopped["stopped_at_ts"] == pytest.approx(samples.ts.iloc[-1])
    assert stopped["stopped_reason"] == f"sampler exited with code {-signal.SIGKILL}"
    assert 0 < stopped["stopped_at_s"] < 10
    by_expr = {t["expr"]: t for t in meta["thresholds"]}
    on_samples, on_requests = by_expr["target_rss_bytes max < 10GiB"], by_expr["latency_ms p95 < 60s"]
    assert on_samples["passed"] is None and on_samples["note"].startswith("sampler stopped after")
    assert on_requests["passed"] is True and "note" not in on_requests
    line = f"samples stop after {stopped['stopped_at_s']} s: sampler died"
    assert line in kit.stdout and line in (kit.run_dir / schema.REPORT_MD).read_text()
    assert_whole_rows(kit.run_dir)
    assert_nothing_left(meta)
