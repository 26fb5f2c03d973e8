"""Which load-generator process saturated, and what each carried (issue 34): on a synthetic two-worker
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
