"""The live threshold evaluator on synthetic rows: pass, fail, abort only after grace, bounded memory."""

from __future__ import annotations

import math
import random

import pytest

from contract.exit_codes import OK, THRESHOLD_FAILED
from scenarios.evaluator import ThresholdEvaluator, exit_code
from scenarios.quantiles import RELATIVE_ERROR, Distribution
from scenarios.thresholds import parse_threshold


def evaluator(*exprs: str, start: float = 0.0) -> ThresholdEvaluator:
    return ThresholdEvaluator(
        [parse_threshold(e, f"--threshold #{i}") for i, e in enumerate(exprs, 1)], start
    )


def request(ttft: float | str = "", ok: int = 1) -> dict:
    return {"ts": 1.0, "operation": "chat.stream", "ok": ok, "ttft_ms": ttft, "latency_ms": 100.0}


def test_ttft_p95_below_the_limit_passes_with_its_sample_count():
    ev = evaluator("ttft_ms p95 < 500")
    for v in range(1, 101):
        ev.observe_request(request(ttft=float(v * 4)))  # 4..400 ms
    [r] = ev.evaluate(10.0)
    assert (r.passed, r.samples, r.abort_due) == (True, 100, False)
    assert r.value == pytest.approx(380, rel=RELATIVE_ERROR)


def test_a_failing_abort_threshold_is_due_only_after_its_grace_period():
    ev = evaluator("ttft_ms p95 < 500 abort grace=10s", start=1000.0)
    for _ in range(20):
        ev.observe_request(request(ttft=600.0))
    early, late = ev.evaluate(1005.0)[0], ev.evaluate(1010.0)[0]
    assert (early.passed, early.abort_due, early.failed_ts) == (False, False, 1005.0)
    assert (late.passed, late.abort_due, late.failed_ts) == (False, True, 1005.0)
    assert late.value == pytest.approx(600, rel=RELATIVE_ERROR)
    assert exit_code([late]) == THRESHOLD_FAILED


def test_a_failing_threshold_without_abort_never_asks_to_stop_but_fails_the_exit_code():
    ev = evaluator("error_rate < 0.1")
    for ok in (1, 0, 0, 1):
        ev.observe_request(request(ok=ok))
    [r] = ev.evaluate(100.0)
    assert (r.passed, r.value, r.samples, r.abort_due) == (False, 0.5, 4, False)
    assert exit_code([r]) == THRESHOLD_FAILED


def test_thresholds_without_data_are_not_judged_and_do_not_fail():
    ev = evaluator("ttft_ms p95 < 500 abort", "queue_length max <= 10")
    ev.observe_request(request(ttft=""))  # a non-streaming request: "not measured"
    results = ev.evaluate(50.0)
    assert [(r.passed, r.value, r.samples) for r in results] == [(None, None, 0), (None, None, 0)]
    assert exit_code(results) == OK


def test_sampler_rows_feed_memory_cpu_and_queue_thresholds():
    ev = evaluator("host_available_bytes min >= 1GiB", "target_cpu_pct max <= 75", "queue_length max <= 1")
    for avail, cpu, queue in ((3e9, 20.0, 0), (2e9, 80.0, 1), (1.5e9, "", 2)):
        ev.observe_sample(
            {"ts": 1.0, "host_available_bytes": avail, "target_cpu_pct": cpu, "queue_length": queue}
        )
    results = ev.evaluate(5.0)
    assert [(r.passed, r.value, r.samples) for r in results] == [
        (True, 1.5e9, 3),
        (False, 80.0, 2),
        (False, 2.0, 3),
    ]


def test_csv_text_cells_are_read_as_numbers():
    ev = evaluator("error_rate < 0.5", "task_total_ms p50 < 1000", "task_failure_rate < 0.5")
    ev.observe_request({"ok": "0"})
    ev.observe_request({"ok": "1"})
    ev.observe_request({"ok": "1"})
    ev.observe_task({"status": "done", "total_ms": "900"})
    ev.observe_task({"status": "failed", "total_ms": "1200"})
    ev.observe_task({"status": "done", "total_ms": "800"})
    assert [r.passed for r in ev.evaluate(1.0)] == [True, True, True]


def test_tasks_not_done_fail_a_done_tasks_threshold_and_those_the_stop_cut_are_neither():
    ev = evaluator("task_failure_rate < 0.01")
    ev.observe_task({"status": "done", "end_reason": "answer"})
    ev.observe_task({"status": "unfinished"})  # cut by the run's own stop: not the gateway's doing
    assert [(r.passed, r.samples) for r in ev.evaluate(1.0)] == [(True, 1)]
    ev.observe_task({"status": "failed", "end_reason": "max_steps"})  # every request answered, no answer
    assert [(r.passed, r.value, r.samples) for r in ev.evaluate(2.0)] == [(False, 0.5, 2)]


def test_dropped_arrivals_come_from_the_pacer_counter():
    ev = evaluator("dropped_arrivals count == 0 abort")
    ev.observe_counter("dropped_arrivals", 0)
    assert ev.evaluate(1.0)[0].passed is True
    ev.observe_counter("dropped_arrivals", 3)
    r = ev.evaluate(2.0)[0]
    assert (r.passed, r.value, r.abort_due) == (False, 3, True)


def test_result_json_has_the_value_that_broke_it():
    ev = evaluator("latency_ms max < 50 abort grace=1s")
    ev.observe_request(request())
    assert ev.evaluate(2.0)[0].as_json() == {
        "expr": "latency_ms max < 50",
        "abort": True,
        "grace_s": 1.0,
        "passed": False,
        "value": 100.0,
        "samples": 1,
        "failed_ts": 2.0,
    }


def test_streaming_quantiles_stay_within_one_percent_with_bounded_memory():
    rng = random.Random(7)
    values = [rng.lognormvariate(6, 1.5) for _ in range(100_000)] + [0.0] * 100
    d = Distribution()
    for v in values:
        d.add(v)
    ordered = sorted(values)
    for q in (0.5, 0.9, 0.95, 0.99, 0.999):
        exact = ordered[max(1, math.ceil(q * len(values))) - 1]
        assert d.quantile(q) == pytest.approx(exact, rel=RELATIVE_ERROR)
    assert d.buckets < 2_100 and d.count == len(values) and d.min == 0.0


def test_trend_thresholds_are_not_judged_until_their_trend_is_observed():
    ev = evaluator("target_rss_slope_mib_per_h < 10", "memory_leak == 0")
    assert [r.passed for r in ev.evaluate(1.0)] == [None, None]
    ev.observe_trend("target_rss_slope_mib_per_h", 121.4, 240)
    ev.observe_trend("memory_leak", 1.0, 240)
    slope, leak = ev.evaluate(2.0)
    assert (slope.passed, slope.value, slope.samples) == (False, 121.4, 240)
    assert (leak.passed, leak.value) == (False, 1.0)
    assert exit_code([slope, leak]) == THRESHOLD_FAILED
    ev.observe_trend("target_rss_slope_mib_per_h", None, 12)  # "not enough data"
    assert ev.evaluate(3.0)[0].passed is None


def test_two_thresholds_on_one_metric_see_each_value_once():
    """Each metric is fed once per row, however many thresholds read it (a value was counted once per
    threshold on its metric, and 10,000 thresholds made every row cost 10,000 additions)."""
    ev = evaluator("latency_ms count == 10", "latency_ms p50 < 500", "error_rate < 0.5", "error_rate < 1")
    for _ in range(10):
        ev.observe_request(request(ok=1))
    count, p50, *rates = ev.evaluate(1.0)
    assert (count.value, count.samples, count.passed) == (10.0, 10, True)
    assert p50.samples == 10 and [r.samples for r in rates] == [10, 10]


@pytest.mark.parametrize("bad", [math.nan, math.inf, "nan", "-inf"])
def test_a_non_finite_value_is_not_measured(bad):
    ev = evaluator("tokens_in max < 100", "ttft_ms p95 < 500")
    ev.observe_request({"ok": 1, "tokens_in": bad, "ttft_ms": bad})
    ev.observe_request({"ok": 1, "tokens_in": 5, "ttft_ms": 5})
    assert [(r.value, r.samples) for r in ev.evaluate(1.0)] == [(5.0, 1), (5.0, 1)]
