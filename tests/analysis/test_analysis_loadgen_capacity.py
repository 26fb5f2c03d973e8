"""Which load-generator process saturated, and what each carried: on a synthetic two-worker
run with a known truth (each worker's CPU p90 as run.json records it, each process's rows by the pid
their agent ids start with, a fixed latency), the verdict names the saturated worker alone with its
figure, and the console's line gives each process's requests/s and streams in flight."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.load import load_run
from analysis.loadgen_capacity import loadgen_capacity
from analysis.summary import console_summary
from analysis.validity import LOADGEN_CPU_PCT, run_validity
from contract import schema
from tests.synthetic import T0, stream_requests, write_run_dir

SECONDS = 60.0
LATENCY_MS = 500.0
ROWS = {"101": 300, "102": 120}  # requests per pid: 5.0 and 2.0 per second, 2.5 and 1.0 streams


def two_workers(tmp_path, cpu: dict[str, float]):
    parts = [
        stream_requests(n, SECONDS, error_rate=0.0, seed=i).assign(
            agent_id=[f"{pid}-{k % 4}" for k in range(n)], latency_ms=LATENCY_MS
        )
        for i, (pid, n) in enumerate(ROWS.items())
    ]
    requests = pd.concat(parts).sort_values("ts")
    meta = {"run_id": "w", "start_ts": T0, "end_ts": T0 + SECONDS, "workers_cpu_p90": cpu}
    return load_run(write_run_dir(tmp_path, meta, requests=requests))


def test_the_verdict_names_the_saturated_worker_alone_with_its_cpu(tmp_path):
    run = two_workers(tmp_path, {"worker 1 (pid 101)": 97.5, "worker 2 (pid 102)": 40.0})
    validity = run_validity(run)
    assert validity.valid is False
    reason = validity.as_json()["reasons"][0]
    assert "(worker 1 (pid 101) at 97.5 %)" in reason and "worker 2" not in reason, reason
    assert "worker 1 (pid 101) at 97.5 %" in console_summary(run)


def test_two_saturated_workers_are_named_worst_first(tmp_path):
    run = two_workers(tmp_path, {"worker 1 (pid 101)": 92.0, "worker 2 (pid 102)": 99.0})
    over = run_validity(run).checks[0].over
    assert over == ("worker 2 (pid 102) at 99.0 %", "worker 1 (pid 101) at 92.0 %")


@pytest.mark.parametrize(("cpu", "rose"), [(97.5, True), (LOADGEN_CPU_PCT - 20, False)])
def test_the_console_states_each_process_rate_streams_and_whether_its_timing_rose(tmp_path, cpu, rose):
    run = two_workers(tmp_path, {"worker 1 (pid 101)": cpu, "worker 2 (pid 102)": 40.0})
    found = loadgen_capacity(run, run_validity(run))
    assert found is not None and found.rose is rose
    shares = {p.pid: (p.requests, p.per_s, p.streams) for p in found.processes}
    assert shares == {
        pid: (n, round(n / SECONDS, 1), round(n * LATENCY_MS / 1000 / SECONDS, 1)) for pid, n in ROWS.items()
    }
    line = found.line()
    assert "2 processes" in line and "pid 101: 5.0 req/s, 2.5 streams" in line
    assert ("ROSE: add processes" in line) is rose and line in console_summary(run)


def busy_host(tmp_path, loadgen_cpu: float, lag_ms: float = 60.0):
    """A one-process run at `loadgen_cpu`, the host's CPU at 99 % and 3 runnable tasks per core, its event
    loop `lag_ms` late, and run.json's three busiest other processes."""
    ts = [T0 + i for i in range(int(SECONDS))]
    samples = pd.DataFrame(
        {"ts": ts, "loadgen_cpu_pct": loadgen_cpu, "host_cpu_pct": 99.0, "host_run_queue_per_core": 3.0}
    )
    lag = pd.DataFrame({"ts": ts, "lag_ms": lag_ms})
    others = [
        {"pid": 7, "command": "python -m pytest tests", "cpu_pct": 95.0},
        {"pid": 8, "command": "node build.js", "cpu_pct": 60.0},
        {"pid": 9, "command": "cc1plus", "cpu_pct": 30.0},
    ]
    meta = {"run_id": "b", "start_ts": T0, "end_ts": T0 + SECONDS, "host_others": others}
    requests = stream_requests(120, SECONDS, error_rate=0.0).assign(agent_id="101-0", latency_ms=LATENCY_MS)
    run_dir = write_run_dir(tmp_path, meta, requests=requests, samples=samples)
    lag.to_csv(run_dir / schema.LOOP_LAG_CSV, index=False)
    return load_run(run_dir)


def test_a_busy_host_names_its_busiest_other_processes_instead_of_adding_processes(tmp_path):
    """The load generator's own CPU p90 at 20 %, other processes holding the cores: "add processes" was
    the advice; the host is busy, and the three busiest others are named, in console, report, summary."""
    from analysis.report import loadgen_section
    from analysis.summary_json import summary

    run = busy_host(tmp_path, loadgen_cpu=20.0)
    advice = run_validity(run).advice()
    assert advice is not None and advice.startswith("the host is busy (other processes")
    assert "pid 7 python -m pytest tests 95.0 %" in advice and "pid 9 cc1plus 30.0 %" in advice
    line = loadgen_capacity(run, run_validity(run)).line()
    assert f"ROSE: {advice}" in line and "add processes" not in console_summary(run)
    assert f"advice: {advice}" in loadgen_section(run).notes
    assert summary(run)["validity"]["advice"] == advice
    quiet_loop = busy_host(tmp_path / "held", loadgen_cpu=20.0, lag_ms=2.0)  # its own timing held
    held = loadgen_capacity(quiet_loop, run_validity(quiet_loop))
    assert held is not None and held.line().endswith(f") held; {advice}"), held.line()


def test_a_saturated_load_generator_on_a_busy_host_is_still_told_to_add_processes(tmp_path):
    assert (
        run_validity(busy_host(tmp_path, loadgen_cpu=99.0)).advice()
        == "add processes (--processes N) or hosts"
    )
