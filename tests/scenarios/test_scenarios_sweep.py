"""The sweep profile: a synchronous pass, a throughput pass, then K rates evenly spaced between the two
rates the closed passes measured, each held; pure, driven with `now` and request rows."""

from __future__ import annotations

import pytest

from scenarios.errors import ProfileConfigError
from scenarios.options import ProfileOptions
from scenarios.registry import build_profile
from scenarios.sweep import SweepParams, SweepPlan, SweepProfile

T0 = 1000.0


def completed(plan: SweepPlan, start_s: float, end_s: float, per_s: float, ok: int = 1) -> None:
    """Requests of 0.5 s finishing at `per_s` a second between two offsets."""
    n = int((end_s - start_s) * per_s)
    for k in range(n):
        end = T0 + start_s + (k + 0.5) / per_s
        plan.observe_request({"ts": end - 0.5, "latency_ms": 500.0, "ok": ok})


def test_the_passes_run_one_agent_then_the_pool_each_for_the_hold():
    profile = SweepProfile(SweepParams(rates=3, hold_s=10, max_agents=20, baseline_s=5))
    assert profile.tick(1).users == 0 and profile.tick(1).phase == "baseline"
    assert (profile.tick(6).users, profile.tick(6).phase) == (1, "synchronous")
    assert (profile.tick(16).users, profile.tick(16).phase) == (20, "throughput")
    assert [profile.tick(t).phase for t in (26, 36, 46)] == ["rate-1", "rate-2", "rate-3"]
    assert profile.tick(55) is None and profile.end_s == 55
    assert [p.name for p in profile.phases()][:3] == ["baseline", "synchronous", "throughput"]


def test_rates_are_spaced_between_the_measured_synchronous_and_throughput_rates():
    plan = SweepProfile(SweepParams(rates=4, hold_s=10)).paced_by(T0)
    completed(plan, 0, 10, per_s=2)  # synchronous: 2 successes/s
    completed(plan, 10, 20, per_s=12)  # throughput: 12 successes/s
    completed(plan, 10, 20, per_s=30, ok=0)  # refusals do not count
    assert plan.claim(T0 + 15) is None  # a closed pass deals no arrivals
    first = plan.claim(T0 + 20)
    assert [p.rate for p in plan.passes[2:]] == pytest.approx([4, 6, 8, 10])
    assert first is not None and first.due_ts == pytest.approx(T0 + 20)
    assert plan.rate_points() == [
        [20, 4.0],
        [30, 4.0],
        [30, 6.0],
        [40, 6.0],
        [40, 8.0],
        [50, 8.0],
        [50, 10.0],
        [60, 10.0],
    ]
    rows = plan.boundaries()
    assert [r["measured_rate"] for r in rows[:2]] == [2.0, 12.0] and rows[2]["measured_rate"] is None


def test_a_rate_pass_paces_its_rate_and_counts_what_nobody_took():
    plan = SweepProfile(SweepParams(rates=1, hold_s=10, arrivals="poisson", arrival_seed=2)).paced_by(T0)
    completed(plan, 0, 10, per_s=2)
    completed(plan, 10, 20, per_s=38)  # the one rate: 20/s
    due = []
    while (a := plan.claim(T0 + 20 + (len(due) and due[-1] - T0 - 20))) is not None:
        due.append(a.due_ts)
    assert len(due) == pytest.approx(200, rel=0.25) and all(T0 + 20 <= t < T0 + 30 for t in due)
    assert plan.settle(T0 + 40) == 0 and plan.issued == len(due)


def test_the_sweep_takes_no_stages_and_no_arrival_rate():
    with pytest.raises(ProfileConfigError, match="--stages does not apply"):
        build_profile("sweep", ProfileOptions(profile="sweep", stages="10s:1"))
    with pytest.raises(ProfileConfigError, match="--arrival-rate does not apply"):
        build_profile("sweep", ProfileOptions(profile="sweep", arrival_rate=5))


def test_options_reach_the_sweep():
    opts = ProfileOptions(profile="sweep", sweep_rates=3, hold_s=7, max_agents=9)
    profile = build_profile("sweep", opts)
    assert isinstance(profile, SweepProfile)
    assert (profile.params.rates, profile.params.hold_s, profile.params.max_agents) == (3, 7, 9)
