"""Pure parts of the sampler: cgroup file parsing, JSON field paths, row formatting, option round trips."""

from __future__ import annotations

import pytest

from contract.schema import SAMPLE_COLUMNS
from sampler.cgroupfs import combine, memory_from_files
from sampler.cpu import run_queue_per_core
from sampler.options import SamplerOptions, UsageError, parse
from sampler.queue_probe import FieldError, field_value
from sampler.readings import CgroupReading, HostReading, QueueReading, TargetReading
from sampler.rows import Tick, to_row


def test_cgroup_v2_files_map_to_current_peak_anon_file():
    files = {"memory.current": "300\n", "memory.peak": "400\n", "memory.stat": "anon 10\nfile 20\n"}
    r = memory_from_files(files)
    assert r == CgroupReading(300, 400, 10, 20)


def test_cgroup_v1_files_map_to_usage_max_and_hierarchical_rss_cache():
    stat = "cache 1\nrss 2\ntotal_cache 30\ntotal_rss 40\n"
    files = {"memory.usage_in_bytes": "500", "memory.max_usage_in_bytes": "600", "memory.stat": stat}
    r = memory_from_files(files)
    assert r == CgroupReading(500, 600, 40, 30)


def test_cgroup_without_memory_files_reads_all_empty():
    assert memory_from_files({}) == CgroupReading(None, None, None, None)


def test_several_cgroups_sum_field_by_field():
    both = combine([CgroupReading(1, None, 3, None), CgroupReading(10, None, 30, 5)])
    assert both == CgroupReading(11, None, 33, 5)


def test_field_path_reads_nested_numbers_and_list_lengths():
    doc = {"queue": {"n_pending": 2, "n_running": 6}, "tasks": [1, 2, 3]}
    assert field_value(doc, "queue.n_pending") == 2.0
    assert field_value(doc, "tasks") == 3.0


@pytest.mark.parametrize("doc", [{"queue": {}}, {"queue": {"n_pending": "two"}}, ["x"], {"queue": True}])
def test_field_path_to_nothing_or_a_non_number_is_an_error(doc):
    with pytest.raises(FieldError):
        field_value(doc, "queue.n_pending")


def _tick(**kw) -> Tick:
    base = dict(
        ts=1796000000.12345,
        elapsed_s=1.5,
        target_alive=True,
        target=TargetReading(rss_bytes=1000, pss_bytes=None, uss_bytes=None, procs=2, cpu_seconds=0.5),
        target_cpu_pct=None,
        host=HostReading(available_bytes=5, swap_used_bytes=0, cpu_pct=12.345, load1=0.5),
    )
    return Tick(**{**base, **kw})


def test_row_has_schema_columns_and_empty_cells_for_unmeasured():
    row = to_row(_tick())
    assert tuple(row) == SAMPLE_COLUMNS
    assert row["target_pss_bytes"] == "" and row["target_cpu_pct"] == "" and row["queue_length"] == ""
    assert row["host_swap_used_bytes"] == "0"  # zero is a measurement, not an empty cell
    assert row["ts"] == "1796000000.123" and row["host_cpu_pct"] == "12.3"


def test_the_run_queue_is_the_runnable_tasks_but_the_reader_per_core():
    stat = "cpu  1 2 3 4\nprocs_running 5\nprocs_blocked 0\n"
    assert run_queue_per_core(stat, cpus=2) == 2.0  # 5 running, one of them the sampler reading it
    assert run_queue_per_core("procs_running 1\n", cpus=4) == 0.0
    assert run_queue_per_core("cpu 1 2\n", cpus=2) is None  # no such line: not measured
    host = HostReading(available_bytes=5, swap_used_bytes=0, cpu_pct=1.0, load1=0.5, run_queue_per_core=1.5)
    assert to_row(_tick(host=host))["host_run_queue_per_core"] == "1.50"


def test_row_joins_events_and_marks_death():
    row = to_row(_tick(target_alive=False, events=("target_exited", "queue_probe_error: x")))
    assert row["target_alive"] == "0" and row["event"] == "target_exited; queue_probe_error: x"
    assert to_row(_tick(queue=QueueReading(2.0, 6.0)))["queue_length"] == "2"


def test_options_round_trip_through_argv():
    opts = SamplerOptions(
        out="r/samples.csv",
        pids=[5, 6],
        matches=["worker"],
        interval=0.1,
        pss_every=5,
        queue_url="http://127.0.0.1:9/q",
        queue_field="queue.n",
        loadgen_pid=7,
    )
    assert parse(opts.to_argv()) == opts


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--out", "x.csv"], "no target"),
        (["--out", "x.csv", "--pid", "1", "--interval", "0.01"], "--interval"),
        (["--out", "x.csv", "--match", "("], "bad regex"),
        (["--out", "x.csv", "--pid", "1", "--queue-url", "http://h/q"], "--queue-field"),
        (["--out", "x.csv", "--pid", "1", "--queue-url", "ftp://h/q", "--queue-field", "a"], "http"),
        (["--out", "x.csv", "--pid", "1", "--queue-field", "a"], "need --queue-url"),
        (["--out", "x.csv", "--pid", "-3"], "positive"),
        (["--out", "x.csv", "--pid", "1", "--pss-every", "-1"], "--pss-every"),
    ],
)
def test_bad_option_values_are_one_line_usage_errors(argv, message):
    with pytest.raises(UsageError, match=message) as err:
        parse(argv)
    assert "\n" not in str(err.value)
