"""Service levels (--slo): the grammar and its one-line errors, and goodput counted live: which requests
and tasks are scored, which meet every SLO, and thresholds that judge goodput and TPOT."""

from __future__ import annotations

import re

import pytest

from scenarios.errors import ThresholdConfigError
from scenarios.evaluator import ThresholdEvaluator
from scenarios.slo import Goodput, check_goodput_thresholds, parse_slo
from scenarios.thresholds import parse_threshold


def chat(ok=1, ttft=200.0, latency=500.0, tokens=16, task_id=None, op="chat.stream") -> dict:
    return {
        "operation": op,
        "ok": ok,
        "ttft_ms": ttft,
        "latency_ms": latency,
        "tokens_out": tokens,
        "content_tokens": tokens,  # one chunk a token, the first at TTFT, the last at the end
        "content_span_ms": latency - ttft if ttft is not None else None,
        "task_id": task_id,
    }


def test_an_slo_is_a_bound_with_its_unit_and_an_attainment():
    slo = parse_slo("task_total_ms <= 5m", "--slo #1")
    assert (slo.metric.name, slo.op, slo.value, slo.attainment, slo.of_tasks) == (
        "task_total_ms",
        "<=",
        300000.0,
        0.95,
        True,
    )
    slo = parse_slo("tpot_ms p99 <= 50", "--slo #2")
    assert (slo.expr, slo.attainment, slo.as_json()["derived"]) == ("tpot_ms p99 <= 50", 0.99, True)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("ttft_ms 500", "expected METRIC [pNN] OP VALUE"),
        ("error_rate < 0.01", "'error_rate' is no SLO metric"),
        ("target_rss_bytes < 1GiB", "'target_rss_bytes' is no SLO metric"),
        ("ttft_ms <= fast", "bad value for ttft_ms (ms)"),
        ("ttft_ms p0 <= 400", "p0 is not a share"),
    ],
)
def test_a_bad_slo_is_one_line_naming_what_is_wrong(text, problem):
    with pytest.raises(ThresholdConfigError, match=re.escape(problem)) as e:
        parse_slo(text, "--slo #3")
    assert str(e.value).startswith("--slo #3") and "\n" not in str(e.value)


def test_tpot_is_latency_after_the_first_token_per_further_token():
    g = Goodput((parse_slo("tpot_ms <= 20", "s"),))
    g.observe_request(chat(ttft=200, latency=500, tokens=16))  # (500 - 200) / 15 = 20
    g.observe_request(chat(ttft=200, latency=516, tokens=16))  # 21.07
    assert g.share() == (0.5, 2)


def test_goodput_scores_the_operations_that_measure_every_slo_and_counts_failures_as_misses():
    g = Goodput((parse_slo("ttft_ms <= 300", "s"),))
    g.observe_request(chat(ok=0, ttft=None))  # a refused stream: scored once its operation measures TTFT
    assert g.share() == (None, 0)
    g.observe_request(chat(ttft=250))
    g.observe_request(chat(ttft=350))
    g.observe_request(chat(op="session.get", ttft=None))  # never measures TTFT: not scored
    assert g.share() == (pytest.approx(1 / 3), 3)


def test_a_task_meets_its_slos_when_done_within_its_bounds_and_no_request_of_it_missed():
    g = Goodput((parse_slo("ttft_ms <= 300", "s"), parse_slo("task_total_ms <= 10s", "t")))
    g.observe_request(chat(ttft=250, task_id="a"))
    g.observe_request(chat(ttft=400, task_id="b"))
    for task, total, status in (
        ("a", 5000, "done"),
        ("b", 5000, "done"),
        ("c", 20000, "done"),
        ("d", 1, "failed"),
    ):
        g.observe_task({"task_id": task, "total_ms": total, "status": status})
    assert g.share(of_tasks=True) == (0.25, 4)


def test_thresholds_judge_goodput_and_tpot_live():
    slos = [parse_slo("ttft_ms <= 300", "s")]
    good = parse_threshold("goodput >= 0.75", "--threshold #1")
    tpot = parse_threshold("tpot_ms p50 < 21", "--threshold #2")
    ev = ThresholdEvaluator([good, tpot], start_ts=0.0, slos=slos)
    for ttft in (200, 250, 280, 400):
        ev.observe_request(chat(ttft=ttft, latency=ttft + 300))  # 16 tokens: TPOT 20 ms each
    results = {r.expr: r for r in ev.evaluate(1.0)}
    assert (results["goodput >= 0.75"].passed, results["goodput >= 0.75"].value) == (True, 0.75)
    assert (
        results["tpot_ms p50 < 21"].value == pytest.approx(20, rel=0.01)
        and results["tpot_ms p50 < 21"].samples == 4
    )


def test_a_goodput_threshold_needs_an_slo():
    with pytest.raises(ThresholdConfigError, match="goodput needs at least one --slo"):
        check_goodput_thresholds([parse_threshold("goodput >= 0.9", "--threshold #1")], [])
