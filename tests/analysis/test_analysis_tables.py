"""Tables read known answers back from synthetic run directories."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.errors import error_table
from analysis.latency import latency_table
from analysis.load import load_run
from analysis.queue import queue_table
from analysis.resources import resource_table
from analysis.rounds import rounds_table
from analysis.stats import aggregate, describe
from analysis.tasks import task_outcome_table, task_timing_table
from contract.schema import GIB, MIB
from tests.synthetic import T0, rounds_run, write_run_dir


def _requests(latencies, ok=None, **extra) -> pd.DataFrame:
    n = len(latencies)
    return pd.DataFrame(
        {
            "ts": T0 + np.arange(n) * 0.1,
            "agent_id": "a1",
            "operation": "chat",
            "ok": 1 if ok is None else ok,
            "latency_ms": latencies,
            **extra,
        }
    )


def test_queue_time_weighted_mean_and_time_queued_match_a_known_step_series(tmp_path):
    queue = [0] * 10 + [4] * 30 + [2] * 60  # one reading per second, 100 s
    samples = pd.DataFrame({"ts": T0 + np.arange(100.0), "queue_length": queue})
    table = queue_table(load_run(write_run_dir(tmp_path, {}, samples=samples)))
    row = table.loc["queue_length"]
    assert row["max"] == 4
    assert row["time_weighted_mean"] == pytest.approx((4 * 30 + 2 * 60) / 100)
    assert row["time_above_zero_s"] == pytest.approx(90)
    assert "in_progress" not in table.index  # not measured: left out, not zero


def test_latency_percentiles_match_known_values_with_counts(tmp_path):
    lat = np.arange(1.0, 1001.0)
    table = latency_table(load_run(write_run_dir(tmp_path, {}, requests=_requests(lat))))
    row = table.loc["chat"]
    assert row["latency_n"] == 1000
    assert row["latency_p50"] == pytest.approx(500.5)
    assert row["latency_p99"] == pytest.approx(990.01)
    assert row["latency_max"] == 1000
    assert row["latency_small_sample"] == ""


def test_small_samples_flag_the_percentiles_they_cannot_support():
    d = describe(pd.Series(np.arange(24.0)))  # the rounds study had 24 tasks
    assert d["n"] == 24
    assert d["small_sample"] == "p90 needs ~100, p95 needs ~200, p99 needs ~1000"
    assert describe(pd.Series(np.arange(10.0)))["small_sample"].startswith("p50 needs ~20")


def test_stream_ttft_itl_and_decode_rate_are_reported(tmp_path):
    n = 300
    req = _requests(np.full(n, 1200.0), ttft_ms=200.0, itl_ms_mean=10.0, tokens_out=100)
    req.loc[0, "ok"] = 0
    table = latency_table(load_run(write_run_dir(tmp_path, {}, requests=req)))
    row = table.loc["chat"]
    assert (row["requests"], row["failed"], row["ttft_n"]) == (n, 1, n - 1)
    assert row["ttft_p50"] == pytest.approx(200)
    assert row["itl_ms_p50"] == pytest.approx(10)
    assert row["tokens_per_s_p50"] == pytest.approx(100)  # 100 tokens over 1.0 s of generation


def test_errors_grouped_by_kind_with_share(tmp_path):
    ok = [1] * 90 + [0] * 10
    kinds = [""] * 90 + ["timeout"] * 7 + ["http_5xx"] * 3
    req = _requests(np.full(100, 50.0), ok=ok, error_kind=kinds, error="boom")
    table = error_table(load_run(write_run_dir(tmp_path, {}, requests=req)))
    assert list(table["error_kind"]) == ["timeout", "http_5xx"]
    assert list(table["count"]) == [7, 3]
    assert table["share_pct"].tolist() == pytest.approx([7.0, 3.0])


def test_resources_time_below_warning_line_swap_growth_and_cpu(tmp_path):
    avail = [2 * GIB] * 40 + [0.5 * GIB] * 20 + [2 * GIB] * 40
    samples = pd.DataFrame(
        {
            "ts": T0 + np.arange(100.0),
            "target_rss_bytes": 500 * MIB,
            "host_available_bytes": avail,
            "host_swap_used_bytes": np.linspace(0, 64 * MIB, 100),
            "host_cpu_pct": [20.0] * 50 + [60.0] * 50,
        }
    )
    table = resource_table(load_run(write_run_dir(tmp_path, {}, samples=samples)))["value"]
    assert table["peak target RSS (MiB)"] == pytest.approx(500)
    assert table["min host available (MiB)"] == pytest.approx(512)
    assert table["time below 1024 MiB available (s)"] == pytest.approx(20)
    assert table["swap growth (MiB)"] == pytest.approx(64)
    assert table["mean host CPU %"] == pytest.approx(40)
    assert "peak target PSS (MiB)" not in table.index  # not measured: absent, never zero


def test_rounds_table_reads_back_per_worker_memory_and_judges_the_warning_line(tmp_path):
    run = load_run(rounds_run(tmp_path, worker_mib=170.0))
    table = rounds_table(run)
    assert list(table["concurrency"]) == [6, 8, 10]
    assert table["peak_target_rss_mib"].tolist() == pytest.approx([400 + 170 * c for c in (6, 8, 10)])
    assert table["worker_mib_mean"].tolist() == pytest.approx([170.0] * 3, rel=0.01)
    assert table["success_pct"].tolist() == [100.0] * 3
    # host 4 GiB - RSS - 1 GiB other: round 3 (2100 MiB) leaves 972 MiB, below the 1 GiB line
    assert table["passed"].tolist() == [True, True, False]
    assert "below 1024 MiB" in table.loc[3, "why"]


def test_rounds_table_counts_tasks_running_at_once_not_tasks_submitted(tmp_path):
    """The synthetic gateway runs at most 6 at once (its in-progress count) though 8 and 10 are submitted."""
    table = rounds_table(load_run(rounds_run(tmp_path)))
    assert table["ran_at_once"].tolist() == [6, 6, 6]
    assert set(table["ran_at_once_from"]) == {"by the gateway's in-progress count"}


def test_rounds_without_an_in_progress_count_read_overlap_from_the_tasks_own_times(tmp_path):
    """5 tasks submitted to a gateway that runs 2 at a time (each 10 s, back to back): 2 ran at once."""
    run = rounds_run(tmp_path)
    samples = pd.read_csv(run / "samples.csv").drop(columns=["in_progress"])
    samples.to_csv(run / "samples.csv", index=False)
    starts = [T0 + 31 + 10 * (k // 2) for k in range(5)]
    tasks = pd.DataFrame(
        {
            "task_id": [f"r1-{k}" for k in range(5)],
            "round": 1,
            "submitted_ts": T0 + 30,
            "started_ts": starts,
            "finished_ts": [s + 10 for s in starts[:4]] + [np.nan],  # the last one never finished
            "status": ["done"] * 4 + ["unfinished"],
        }
    )
    tasks.to_csv(run / "tasks.csv", index=False)
    table = rounds_table(load_run(run))
    assert table.loc[1, "ran_at_once"] == 2
    assert table.loc[1, "ran_at_once_from"] == "by the tasks' start and finish times"
    assert table.loc[2, "ran_at_once_from"] == "not measured"  # no task of round 2 recorded


def test_task_timing_and_outcomes(tmp_path):
    tasks = pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(30)],
            "status": ["done"] * 27 + ["failed"] * 3,
            "queue_wait_ms": 1000.0,
            "run_ms": np.arange(30) * 100.0,
            "total_ms": 5000.0,
        }
    )
    run = load_run(write_run_dir(tmp_path, {}, tasks=tasks))
    timing = task_timing_table(run)
    assert timing.loc["ready -> done", "p50"] == 5000
    assert timing.loc["run time", "n"] == 30
    outcomes = task_outcome_table(run)
    assert outcomes.loc["failed", "tasks"] == 3
    assert outcomes.loc["total", "tasks"] == 30


def test_multi_run_aggregate_median_range_and_cv():
    agg = aggregate(pd.Series([100.0, 300.0, np.nan]))
    assert (agg["runs"], agg["median"], agg["min"], agg["max"]) == (2, 200, 100, 300)
    assert agg["cv_pct"] == pytest.approx(np.std([100, 300], ddof=1) / 200 * 100)
