"""The rounds state machine (the rounds study): baseline, rounds of N tasks ending when their tasks finish."""

from __future__ import annotations

from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.pacing import pacing_for
from scenarios.registry import PROFILE_NAMES, build_profile
from scenarios.rounds import RoundsParams, RoundsPlan


def claim_all(plan: RoundsPlan, now: float) -> list[int]:
    got = []
    while (r := plan.claim(now)) is not None:
        got.append(r)
    return got


def test_baseline_submits_nothing_then_round_one_offers_exactly_its_tasks():
    plan = RoundsPlan(RoundsParams(levels=(2, 4), baseline_s=10))
    plan.start(100.0)
    assert plan.claim(105.0) is None
    assert claim_all(plan, 110.0) == [1, 1]
    assert (plan.baseline_start_ts, plan.baseline_end_ts) == (100.0, 110.0)


def test_a_round_ends_when_its_last_task_finishes_and_the_next_begins():
    plan = RoundsPlan(RoundsParams(levels=(2, 4), baseline_s=0))
    plan.start(0.0)
    claim_all(plan, 1.0)
    plan.task_finished(1, 5.0)
    assert plan.current.round == 1
    plan.task_finished(1, 7.0)
    assert plan.current.round == 2 and claim_all(plan, 7.5) == [2, 2, 2, 2]
    for t in (8, 9, 10, 12):
        plan.task_finished(2, t)
    assert plan.done
    assert [
        (b["round"], b["concurrency"], b["start_ts"], b["end_ts"], b["end_reason"]) for b in plan.boundaries()
    ] == [
        (1, 2, 0.0, 7.0, "tasks finished"),
        (2, 4, 7.0, 12, "tasks finished"),
    ]


def test_round_hold_ends_a_round_whose_tasks_hang():
    plan = RoundsPlan(RoundsParams(levels=(3, 3), baseline_s=0, round_hold_s=60))
    plan.start(0.0)
    claim_all(plan, 0.0)
    plan.task_finished(1, 10.0)
    plan.advance(59.0)
    assert plan.current.round == 1
    plan.advance(60.0)
    assert plan.current.round == 2
    first = plan.boundaries()[0]
    assert (first["end_ts"], first["finished"], first["end_reason"]) == (60.0, 1, "round hold reached")
    plan.task_finished(1, 70.0)  # a late finisher is counted in its own round only
    assert plan.boundaries()[0]["finished"] == 2 and plan.current.round == 2


def test_stop_closes_the_open_round():
    plan = RoundsPlan(RoundsParams(levels=(2,), baseline_s=0))
    plan.start(0.0)
    claim_all(plan, 0.0)
    plan.stop(30.0)
    assert plan.done and plan.boundaries()[0]["end_reason"] == "run stopped"


def test_rounds_profile_ticks_zero_users_in_baseline_then_one_user_per_task():
    now = [1000.0]
    profile = build_profile("rounds", ProfileOptions(rounds=(2, 4), baseline_s=10))
    profile._clock = lambda: now[0]
    assert profile.tick(0).as_locust() == (0, 1.0) and profile.tick(0).phase == "baseline"
    now[0] = 1010.0
    assert (profile.tick(10).users, profile.tick(10).phase) == (2, "round-1")
    for _ in range(2):
        profile.plan.claim(now[0])
        profile.plan.task_finished(1, now[0])
    assert (profile.tick(10).users, profile.tick(10).phase) == (4, "round-2")
    assert [(ph.name, ph.start_s, ph.end_s) for ph in profile.phases()] == [
        ("baseline", 0.0, 10.0),
        ("round-1", 10.0, 10.0),
        ("round-2", 10.0, None),
    ]
    for _ in range(4):
        profile.plan.claim(now[0])
        profile.plan.task_finished(2, now[0])
    assert profile.tick(11) is None


def test_rounds_default_to_seed_004_levels_and_a_ten_second_baseline():
    params = build_profile("rounds", ProfileOptions()).params
    assert (params.levels, params.baseline_s, params.round_hold_s) == ((6, 8, 10), 10.0, None)


def test_only_the_rounds_profile_says_it_runs_in_rounds_and_it_is_the_one_its_pacing_grants():
    """A worker asks the profile's trait (kit/runs.py) whether to wait for the master's round grants: the
    trait and the pacing its plan makes agree for every profile an empty form builds."""
    in_rounds = []
    for name in PROFILE_NAMES:
        try:
            profile = build_profile(name, ProfileOptions(profile=name))
        except ProfileConfigError:  # a profile that needs its input (the trace replay: a trace)
            continue
        assert profile.runs_in_rounds == (pacing_for(profile.paced_by(0.0)).rounds_plan() is not None), name
        in_rounds += [name] if profile.runs_in_rounds else []
    assert in_rounds == ["rounds"]
