"""Threshold parsing from --threshold strings and TOML: good input read right, bad input one clear line."""

from __future__ import annotations

import pytest

from contract.schema import GIB, MIB, REQUEST_COLUMNS, SAMPLE_COLUMNS, TASK_COLUMNS
from scenarios.errors import ThresholdConfigError
from scenarios.metrics import METRICS
from scenarios.options import ProfileOptions
from scenarios.registry import build_thresholds
from scenarios.thresholds import parse_threshold, parse_thresholds_toml
from tests.paths import REPO

EXAMPLES = REPO / "examples" / "thresholds.toml"


@pytest.mark.parametrize(
    ("text", "metric", "agg", "op", "value"),
    [
        ("ttft_ms p95 < 500", "ttft_ms", "p95", "<", 500),
        ("latency_ms p90 <= 5000", "latency_ms", "p90", "<=", 5000),
        ("latency_ms p90 <= 5s", "latency_ms", "p90", "<=", 5000),
        ("error_rate < 0.01", "error_rate", "rate", "<", 0.01),
        ("error_rate < 1%", "error_rate", "rate", "<", 0.01),
        ("target_cpu_pct max <= 75", "target_cpu_pct", "max", "<=", 75),
        ("host_available_bytes min >= 1GiB", "host_available_bytes", "min", ">=", GIB),
        ("host_swap_used_bytes max < 512MiB", "host_swap_used_bytes", "max", "<", 512 * MIB),
        ("queue_length max <= 10", "queue_length", "max", "<=", 10),
        ("target_rss_bytes max < 1GiB", "target_rss_bytes", "max", "<", GIB),
        ("dropped_arrivals count == 0", "dropped_arrivals", "count", "==", 0),
        ("dropped_arrivals == 0", "dropped_arrivals", "count", "==", 0),
        ("task_total_ms p95 < 300000", "task_total_ms", "p95", "<", 300000),
        ("ttft_ms p99.9<800", "ttft_ms", "p99.9", "<", 800),
    ],
)
def test_threshold_strings_parse_to_metric_aggregation_operator_and_value_in_file_units(
    text, metric, agg, op, value
):
    th = parse_threshold(text, "--threshold #1")
    assert (th.metric.name, th.agg, th.op, th.value) == (metric, agg, op, pytest.approx(value))
    assert (th.abort, th.grace_s) == (False, 0.0)


def test_abort_and_grace_flags_follow_the_expression():
    th = parse_threshold("ttft_ms p95 < 500 abort grace=10s", "--threshold #1")
    assert (th.expr, th.abort, th.grace_s, th.quantile) == ("ttft_ms p95 < 500", True, 10.0, 0.95)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ttft p95 < 500", "column 1: unknown metric 'ttft'"),
        ("ttft_ms p9x < 500", "column 9: unknown aggregation 'p9x'"),
        ("ttft_ms p100 < 500", "column 9: unknown aggregation 'p100'"),
        ("ttft_ms < 500", "ttft_ms needs an aggregation"),
        ("ttft_ms p95 500", "column 13: expected an operator"),
        ("ttft_ms p95 <", "expected exactly one value"),
        ("ttft_ms p95 < 5 6", "expected exactly one value"),
        ("ttft_ms p95 < fast", "column 15: bad value for ttft_ms (ms)"),
        ("error_rate p95 < 0.01", "error_rate takes no aggregation but 'rate'"),
        ("target_rss_bytes max < 1GiBs", "bad value for target_rss_bytes (bytes)"),
        ("queue_length max < 5%", "bad value for queue_length"),
        ("ttft_ms p95 < 500 grace=soon", "grace 'soon' is not a duration"),
        ("", "empty"),
    ],
)
def test_bad_threshold_strings_raise_one_line_with_position(text, message):
    with pytest.raises(ThresholdConfigError) as err:
        parse_threshold(text, "--threshold #3")
    assert message in str(err.value) and str(err.value).startswith("--threshold #3")
    assert "\n" not in str(err.value)


def test_toml_tables_carry_abort_and_grace():
    found = parse_thresholds_toml(
        '[[threshold]]\nexpr = "ttft_ms p95 < 500"\nabort = true\ngrace = "10s"\n'
        '[[threshold]]\nexpr = "error_rate < 0.01"\n',
        "t.toml",
    )
    assert [(t.expr, t.abort, t.grace_s, t.where) for t in found] == [
        ("ttft_ms p95 < 500", True, 10.0, "t.toml [[threshold]] #1"),
        ("error_rate < 0.01", False, 0.0, "t.toml [[threshold]] #2"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[threshold]]\nexpr = 'ttft_ms p95 <'\nabort = tru\n", "t.toml: not valid TOML"),
        ("[[threshold]]\nexpr = 'ttft_ms p95 < 500'\nabrot = true\n", "#1: unknown key 'abrot'"),
        ("[[threshold]]\nabort = true\n", "#1: missing expr"),
        ("[[threshold]]\nexpr = 'ttft_ms p95 < 500'\nabort = 'yes'\n", "#1: abort must be true or false"),
        (
            "[[threshold]]\nexpr = 'error_rate < 0.01'\n[[threshold]]\nexpr = 'ttft_ms p95 < x'\n",
            "#2 'ttft_ms",
        ),
        ("[thresholds]\nx = 1\n", "unknown table 'thresholds'"),
    ],
)
def test_bad_toml_names_the_entry_and_the_problem(text, message):
    with pytest.raises(ThresholdConfigError) as err:
        parse_thresholds_toml(text, "t.toml")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_example_file_and_the_options_combine_file_first(tmp_path):
    found = build_thresholds(
        ProfileOptions(thresholds_file=str(EXAMPLES), threshold_exprs=("error_rate < 0.05",))
    )
    assert len(found) > 3 and found[-1].where == "--threshold #1"


def test_a_missing_thresholds_file_is_one_line(tmp_path):
    with pytest.raises(ThresholdConfigError, match="cannot read thresholds file"):
        build_thresholds(ProfileOptions(thresholds_file=str(tmp_path / "nope.toml")))


def test_every_metric_names_a_column_of_the_run_directory_schema():
    columns = {"request": REQUEST_COLUMNS, "task": TASK_COLUMNS, "sample": SAMPLE_COLUMNS}
    missing = [m.name for m in METRICS.values() if m.source in columns and m.column not in columns[m.source]]
    assert missing == []


def test_trend_metrics_take_no_aggregation_and_refuse_abort():
    th = parse_threshold("target_rss_slope_mib_per_h < 10", "--threshold #1")
    assert (th.metric.source, th.agg, th.op, th.value) == ("trend", "value", "<", 10.0)
    assert parse_threshold("memory_leak == 0", "--threshold #2").metric.name == "memory_leak"
    with pytest.raises(ThresholdConfigError, match="judged once, at the end of the run: 'abort'"):
        parse_threshold("target_rss_slope_mib_per_h < 10 abort", "--threshold #3")
    with pytest.raises(ThresholdConfigError, match="takes no aggregation but 'value'"):
        parse_threshold("error_rate_drift_pp_per_h p95 < 1", "--threshold #4")
