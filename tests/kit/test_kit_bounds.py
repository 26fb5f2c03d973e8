"""Sizes the run bounds itself: the most thresholds a run may have (scenarios.thresholds.MAX_THRESHOLDS)
are judged cheaply, live every second and once more at the end, over the rows of a long run (10,000
thresholds made the end of a 3 s run cost 250 CPU-seconds; more than the cap are refused, see
tests/kit/test_bad_input_corpus.py); EDIT in the web UI keeps the user cap every profile passes.

Truth: this process's CPU time (not wall time: the machine is shared) for the real LiveJudge, fed
100,000 request rows, over a run directory holding an hour of samples and those requests.
"""

from __future__ import annotations

import itertools
import time

import pytest

from contract import schema
from kit import webui
from kit.judge import LiveJudge
from scenarios.metrics import METRICS
from scenarios.options import MAX_USERS
from scenarios.thresholds import MAX_THRESHOLDS, parse_threshold
from tests.synthetic import T0, soak_samples, stream_requests, write_run_dir

END_OF_RUN_CPU_S = 5.0  # the bar for the end of a run with the cap
LIVE_TICK_CPU_S = 0.5  # judged every second: half a core at most
ROWS = 100_000
AGGREGATIONS = ("p50", "p95", "p99.9", "avg", "min", "max", "count", "last")


def most_thresholds() -> list:
    """MAX_THRESHOLDS thresholds over every metric: each aggregation its metric takes, in turn."""
    exprs = []
    for metric in itertools.cycle(METRICS.values()):
        if len(exprs) == MAX_THRESHOLDS:
            break
        takes_agg = not metric.rate and metric.source not in ("counter", "trend")
        agg = f" {AGGREGATIONS[len(exprs) % len(AGGREGATIONS)]}" if takes_agg else ""
        exprs.append(f"{metric.name}{agg} < 1000000000")
    return [parse_threshold(e, f"#{n}") for n, e in enumerate(exprs, 1)]


@pytest.mark.timing
def test_the_most_thresholds_are_judged_live_and_at_the_end_within_their_bars(tmp_path):
    requests = stream_requests(ROWS, 3600.0)
    write_run_dir(tmp_path, {"run_id": "bounds"}, samples=soak_samples(3600), requests=requests)
    thresholds = most_thresholds()
    assert len(thresholds) == MAX_THRESHOLDS
    judge = LiveJudge(thresholds, T0, tmp_path / schema.SAMPLES_CSV, lambda _now: 0)
    for row in requests.to_dict("records"):
        judge.on_row(schema.REQUESTS_CSV, row)
    started = time.process_time()
    judge.judge(T0 + 3600)
    live_s = time.process_time() - started
    started = time.process_time()
    results = judge.judge(T0 + 3601, final=True)
    judge.as_json()
    end_s = time.process_time() - started
    print(f"{MAX_THRESHOLDS} thresholds: live tick {live_s:.3f} CPU-s, end of run {end_s:.3f} CPU-s")
    assert len(results) == MAX_THRESHOLDS and all(r.samples for r in results if r.expr.startswith("ttft"))
    assert live_s <= LIVE_TICK_CPU_S and end_s <= END_OF_RUN_CPU_S, (live_s, end_s)


def test_edit_in_the_web_ui_keeps_the_user_cap():
    asked: list[tuple[int, float]] = []
    edit = lambda users, rate: asked.append((users, rate))  # noqa: E731 - applied: None
    answer = webui._edit({"user_count": str(MAX_USERS + 1), "spawn_rate": "10"}, edit, "http://h")
    assert not answer["success"] and f"more than {MAX_USERS}" in answer["message"] and asked == []
    assert webui._edit({"user_count": str(MAX_USERS), "spawn_rate": "10"}, edit, "http://h")["success"]
    assert asked == [(MAX_USERS, 10.0)]
