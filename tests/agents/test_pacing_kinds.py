"""Every pacing kind answers what the run asks of it (the run never asks its type): the closed model's
base answers, an open model's arrivals counted from a known timing, a sweep's rows and passes, a rounds
clock and its boundaries at the end."""

from __future__ import annotations

from scenarios.arrivals import Pacer
from scenarios.pacing import ArrivalCounts, Pacing, pacing_for
from scenarios.rounds import RoundsParams, RoundsPlan
from scenarios.sweep import SweepParams, SweepPlan

START = 100.0


def test_the_closed_model_gives_a_ticket_at_once_and_keeps_nothing():
    closed = pacing_for(None)
    assert type(closed) is Pacing and closed.take(START) is not None and not closed.spaces_work
    meta: dict = {}
    closed.record_end(meta, START)
    assert closed.arrivals(START) is None and closed.rounds_plan() is None
    assert closed.row_listeners() == [] and meta == {}


def test_an_open_model_counts_its_arrivals_issued_and_dropped_from_a_known_timing():
    pacing = pacing_for(Pacer([(0, 0.0), (1, 0.5), (2, 1.0)], START, late_after_s=1.0))
    assert pacing.spaces_work and pacing.shares_arrivals and pacing.rounds_plan() is None
    assert pacing.take(START) is not None  # arrival 0, taken at once
    assert pacing.arrivals(START + 3.0) == ArrivalCounts(issued=1, dropped=2, first_dropped_ts=START + 0.5)


def test_a_sweep_measures_request_rows_records_its_passes_and_paces_in_one_process_only():
    plan = SweepPlan(SweepParams(rates=1, hold_s=2.0), START)
    pacing = pacing_for(plan)
    assert pacing.spaces_work and not pacing.shares_arrivals and len(pacing.row_listeners()) == 1
    meta: dict = {}
    pacing.record_end(meta, START)
    assert [p["kind"] for p in meta["sweep"]] == [p.kind for p in plan.passes]


def test_rounds_run_only_task_agents_and_close_their_open_round_at_the_end():
    plan = RoundsPlan(RoundsParams(levels=(2,), baseline_s=0))
    plan.start(START)
    pacing = pacing_for(plan)
    assert pacing.task_agents_only and pacing.rounds_plan() is plan and pacing.arrivals(START) is None
    meta: dict = {"profile": {}}
    pacing.record_end(meta, START + 1.0)
    assert meta["profile"]["rounds"][0]["end_reason"] == "run stopped"
