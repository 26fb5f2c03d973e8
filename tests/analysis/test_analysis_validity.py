"""The load generator's validity rules, on synthetic run directories with a known situation: each rule
fails above its stated limit and holds below it, too few readings leave it unjudged, a saturated process
makes the run invalid, and the console, report.md and summary.json show the one verdict."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.load import load_run
from analysis.model import RunData
from analysis.report import loadgen_section
from analysis.sessions import validity_marks
from analysis.summary import console_summary
from analysis.summary_json import summary
from analysis.validity import (
    ADD_PROCESSES,
    HOST_CPU_PCT,
    LATENESS_MS,
    LOADGEN_CPU_PCT,
    LOOP_LAG_MS,
    RUN_QUEUE_PER_CORE,
    run_validity,
)
from contract.schema import LOOP_LAG_COLUMNS, STREAMS_PER_PROCESS
from tests.synthetic import T0, soak_samples, stream_requests, write_run_dir

QUIET = {"host_cpu_pct": 30.0, "host_run_queue_per_core": 0.5, "loadgen_cpu_pct": 20.0}


def a_run(
    tmp_path,
    samples: dict | None = None,
    lag_ms: float = 1.0,
    lateness_ms: float | None = None,
    streams: tuple[float, int] | None = None,
) -> RunData:
    """60 s of quiet samples (overridden by `samples`), loop-lag rows at `lag_ms`; an open model's
    start lateness when `lateness_ms` is given; with `streams` (S, P), P load-generator processes each
    with S requests in flight on average (one latency for all, from Little's law on the rows' span)."""
    frame = soak_samples(60).assign(**(QUIET | (samples or {})))
    requests = stream_requests(200 if streams is None else int(4 * streams[0] * streams[1]), 60)
    if streams is not None:
        in_flight, processes = streams
        span = float(requests["ts"].max() - requests["ts"].min())
        seconds = in_flight * processes * span / (len(requests) - in_flight * processes)
        pids = [f"{4242 + i % processes}-{i}" for i in range(len(requests))]
        requests = requests.assign(latency_ms=seconds * 1000.0, agent_id=pids)
    meta: dict = {"run_id": "v", "start_ts": T0}
    if lateness_ms is not None:
        requests = requests.assign(start_lateness_ms=lateness_ms)
        meta["open_model"] = {"start_ts": T0, "rate_points": [[0.0, 3.0], [60.0, 3.0]]}
    run_dir = write_run_dir(tmp_path, meta, samples=frame, requests=requests)
    lag = pd.DataFrame({"ts": T0 + np.arange(0, 60, 0.1), "lag_ms": lag_ms})
    lag.reindex(columns=list(LOOP_LAG_COLUMNS)).to_csv(run_dir / "loop_lag.csv", index=False)
    return load_run(run_dir)


def failed(run: RunData) -> list[str]:
    return [c.name for c in run_validity(run).failed]


def test_a_quiet_load_generator_is_valid_and_not_suspect(tmp_path):
    validity = run_validity(a_run(tmp_path, lateness_ms=3.0))
    assert validity.valid is True and not validity.suspect and validity.line() is None
    assert all(c.passed is True for c in validity.checks), validity.checks


@pytest.mark.parametrize(
    ("samples", "name"),
    [
        ({"host_cpu_pct": HOST_CPU_PCT + 7}, "host CPU p90"),
        ({"host_run_queue_per_core": RUN_QUEUE_PER_CORE + 1}, "host run queue median"),
        ({"loadgen_cpu_pct": LOADGEN_CPU_PCT + 5}, "load generator CPU p90"),
    ],
)
def test_each_host_rule_fails_above_its_limit_with_its_reason(tmp_path, samples, name):
    run = a_run(tmp_path, samples)
    assert failed(run) == [name]
    assert run_validity(run).line().startswith(f"LATENCY SUSPECT: {name}")


def test_a_saturated_process_makes_the_run_invalid_a_busy_host_only_suspect(tmp_path):
    assert run_validity(a_run(tmp_path / "cpu", {"loadgen_cpu_pct": 97.0})).valid is False
    busy = run_validity(a_run(tmp_path / "host", {"host_cpu_pct": 99.0}))
    assert busy.valid is True and busy.suspect


def test_the_loop_lag_and_the_start_lateness_rules(tmp_path):
    assert failed(a_run(tmp_path / "lag", lag_ms=LOOP_LAG_MS + 10)) == ["event loop lag p95"]
    late = a_run(tmp_path / "late", lateness_ms=LATENESS_MS + 50)
    assert failed(late) == ["arrival start lateness p95"]


def test_more_streams_in_one_process_than_it_times_well_is_suspect_and_more_processes_advised(tmp_path):
    over = run_validity(a_run(tmp_path / "over", streams=(STREAMS_PER_PROCESS + 10, 1)))
    check = next(c for c in over.checks if c.name == "streams in flight per process")
    assert check.passed is False and check.value == pytest.approx(STREAMS_PER_PROCESS + 10, abs=0.5)
    assert over.valid is True and over.advice() == ADD_PROCESSES, over.line()
    assert "streams in flight per process" in over.line()
    held = run_validity(a_run(tmp_path / "under", streams=(STREAMS_PER_PROCESS - 10, 1)))
    assert not held.suspect, held.line()
    spread = run_validity(a_run(tmp_path / "two", streams=(STREAMS_PER_PROCESS - 10, 2)))
    assert not spread.suspect, spread.line()  # the same streams over two processes: each holds
    both = run_validity(a_run(tmp_path / "both", streams=(STREAMS_PER_PROCESS + 10, 2)))
    named = next(c for c in both.checks if c.name == "streams in flight per process").over
    assert {n.split(" at ")[0] for n in named} == {"pid 4242", "pid 4243"}


def test_a_worker_that_saturated_its_core_decides(tmp_path):
    run = a_run(tmp_path)
    run.meta["workers_cpu_p90"] = {"worker w1": 96.0, "worker w2": 40.0}
    doc = run_validity(run).as_json()
    assert doc["valid"] is False and doc["worst"] == "worker w1" and doc["loadgen_cpu_p90"] == 96.0
    assert set(doc["processes"]) == {"master", "worker w1", "worker w2"}


def test_too_few_readings_leave_a_rule_unjudged(tmp_path):
    run = a_run(tmp_path, {"host_cpu_pct": 99.0})
    assert run.samples is not None
    run.samples = run.samples.head(4)
    host = next(c for c in run_validity(run).checks if c.name == "host CPU p90")
    assert host.passed is None and host.n == 4


def test_the_console_the_report_and_summary_json_show_one_verdict(tmp_path):
    run = a_run(tmp_path, {"host_cpu_pct": 97.0}, lag_ms=30.0)
    line = run_validity(run).line()
    assert line is not None and "host CPU p90 97.0 % > 90 %" in line and "event loop lag p95 30.0 ms" in line
    assert line in console_summary(run).splitlines()
    assert line in loadgen_section(run).notes
    doc = summary(run)["validity"]
    assert doc["suspect"] is True and doc == run_validity(run).as_json()
    assert [c["name"] for c in doc["checks"] if c["passed"] is False] == [
        "host CPU p90",
        "event loop lag p95",
    ]


def test_only_the_loads_own_readings_judge_the_load_generator(tmp_path):
    """The kit's own start-up before the load (a web UI start reads its form, builds the profile) is not
    the load's work: readings before run.json's start_ts, or after its end_ts, are not judged."""
    frame = soak_samples(60).assign(**QUIET)
    frame.loc[frame.index[:10], "loadgen_cpu_pct"] = 100.0  # the first 10 s: busy starting up
    run_dir = write_run_dir(tmp_path, {"run_id": "v", "start_ts": T0 + 10, "end_ts": T0 + 60}, samples=frame)
    verdict = run_validity(load_run(run_dir))
    assert verdict.valid is True and verdict.checks[0].value == pytest.approx(20.0)
    started_early = write_run_dir(tmp_path / "early", {"run_id": "v", "start_ts": T0}, samples=frame)
    assert run_validity(load_run(started_early)).valid is False  # the same readings inside the load fail


@pytest.mark.parametrize(
    ("samples", "mark"),
    [({"loadgen_cpu_pct": 97.0}, "RUN INVALID"), ({"host_cpu_pct": 99.0}, "LATENCY SUSPECT"), ({}, None)],
)
def test_a_replays_timing_figures_carry_the_runs_validity_mark(tmp_path, samples, mark):
    """The Sessions section's timing tables are headed by the run's mark (at x100 agents a lagging load
    generator reads as a slower gateway); a run that held carries none."""
    run = a_run(tmp_path, samples)
    marks = validity_marks(run)
    if mark is None:
        assert marks == []
    else:
        ((title, table),) = marks
        assert title == "run validity" and list(table.index) == [mark]
        assert table.loc[mark, "why"] == "; ".join(c.reason() for c in run_validity(run).failed)
