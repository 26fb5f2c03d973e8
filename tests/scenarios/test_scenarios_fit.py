"""The fit profile's step machine, tick by tick without a clock: the steady rule holds a step whose memory
still rises, a limit binds at its step, the cap ends it, adaptive steps shrink near a limit; its options
refuse bad input in one line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from contract.schema import MIB, REQUESTS_CSV, SAMPLES_CSV
from scenarios import fit
from scenarios.errors import ProfileConfigError
from scenarios.fit import CAP, MEMORY, SLO, FitPlan, SharedOptions, read_limits
from scenarios.fit_step import judge_steady
from scenarios.registry import build_profile, ignored_options
from scenarios.slo import parse_slo
from tests.fit_params import fit_params as params

T0 = 1_000_000.0


def sample(ts: float, rss_mib: float) -> dict:
    return {
        "ts": ts,
        "target_rss_bytes": rss_mib * MIB,
        "host_available_bytes": 4000 * MIB,
        "target_cpu_pct": 10.0,
        "host_cpu_pct": 20.0,
        "target_procs": 1,
    }


def request(ts: float, latency_ms: float = 100.0, ok: bool = True, ttft_ms: float = 50.0) -> dict:
    return {"ts": ts, "latency_ms": latency_ms, "ok": int(ok), "ttft_ms": ttft_ms, "operation": "chat.stream"}


def run(plan: FitPlan, until: float, rss, requests_per_s: int = 0, ok=lambda agents, i: True) -> None:
    """Feed a reading every 0.25 s (RSS as a function of agents and seconds into the step) and
    `requests_per_s` requests, advancing the plan every second, as the run does."""
    t = plan.start_ts
    while t < until and not plan.done:
        t += 0.25
        plan.on_row(SAMPLES_CSV, sample(t, rss(plan.agents, t - plan.current.start_ts)))
        for i in range(requests_per_s // 4):
            plan.on_row(REQUESTS_CSV, request(t - 0.1 + i * 0.001, ok=ok(plan.agents, i)))
        if round(t * 4) % 4 == 0:
            plan.advance(t)


def test_a_step_whose_memory_still_rises_is_held_not_scored_until_steady():
    """Each agent's memory climbs 30 MiB over 8 s after its step starts (a worker importing its
    libraries): the 4 s least hold is not enough, the step is scored once the climb has stopped."""

    def rss(agents: int, into: float) -> float:
        return 100 + 30 * max(0, agents - 1) + (30 * min(into, 8.0) / 8 if agents else 0)

    plan = FitPlan(params(max_agents=2), (), T0)
    run(plan, T0 + 60, rss)
    baseline, first, second = plan.steps
    assert baseline["agents"] == 0 and baseline["scored_ts"] - baseline["start_ts"] == pytest.approx(
        4, abs=0.3
    )
    held = first["scored_ts"] - first["start_ts"]
    assert held >= 8 + 2  # the climb ends at 8 s, and the 2 s window after it must be flat
    assert first["steady"] and first["rss_mib"] == pytest.approx(130, abs=0.5)
    assert plan.binding == CAP and second["agents"] == 2


def test_the_rule_reads_a_rising_window_as_not_steady_and_a_flat_one_as_steady():
    rising = [(T0 + i * 0.25, (100 + i) * MIB) for i in range(8)]  # 4 MiB/s: 240 MiB/min
    flat = [(T0 + i * 0.25, 100 * MIB + (i % 2) * 1000) for i in range(8)]
    assert not judge_steady(rising, 2.0, [], []).steady
    assert "still moving" in judge_steady(rising, 2.0, [], []).why
    assert judge_steady(flat, 2.0, [], []).steady
    few = judge_steady(flat[:2], 2.0, [], [])
    assert not few.steady and "fewer than 3" in few.why


def test_latency_that_moves_between_windows_holds_the_step():
    flat = [(T0 + i * 0.25, 100 * MIB) for i in range(8)]
    assert not judge_steady(flat, 2.0, [400.0] * 20, [100.0] * 20).steady
    assert judge_steady(flat, 2.0, [110.0] * 20, [100.0] * 20).steady
    assert judge_steady(flat, 2.0, [400.0] * 5, [100.0] * 5).steady  # too few requests: memory alone


def test_a_step_never_steady_is_scored_at_its_longest_hold_and_marked():
    plan = FitPlan(params(max_agents=1), (), T0)
    run(plan, T0 + 60, lambda agents, into: 100 + agents * into * 10)  # 600 MiB/min per agent, forever
    step = plan.steps[1]
    assert step["scored_ts"] - step["start_ts"] == pytest.approx(12, abs=0.3)
    assert step["steady"] is False and "still moving" in step["steady_why"]


def test_the_memory_budget_binds_at_the_first_step_whose_steady_rss_reaches_it():
    plan = FitPlan(params(memory_budget_bytes=300 * MIB), (), T0)
    run(plan, T0 + 120, lambda agents, into: 100 + 60 * agents)
    assert [s["agents"] for s in plan.steps] == [0, 1, 2, 3, 4]
    assert plan.binding == MEMORY and plan.done
    assert plan.steps[-1]["limits"][MEMORY] == {"value": 340.0, "limit": 300.0, "breached": True}
    assert plan.record()["stop_reason"] == "memory limit reached at 4 agents"


def test_an_slo_binds_where_goodput_falls_under_its_attainment():
    slo = parse_slo("ttft_ms p95 <= 1000", "--slo #1")
    plan = FitPlan(params(slos=(slo.expr,)), (slo,), T0)
    run(
        plan,
        T0 + 120,
        lambda agents, into: 100.0,
        requests_per_s=20,
        ok=lambda agents, i: agents <= 3 or i % 5 > 0,
    )
    assert plan.binding == SLO and plan.steps[-1]["agents"] == 4
    assert plan.steps[-2]["goodput"] == 1.0 and plan.steps[-1]["goodput"] == pytest.approx(0.8)
    assert plan.steps[-1]["limits"]["errors"]["breached"]  # both at one step: named in the rules' order


def test_adaptive_steps_grow_far_from_the_limit_and_shrink_near_it():
    plan = FitPlan(params(step_agents=None, max_agents=100, memory_budget_bytes=1100 * MIB), (), T0)
    run(plan, T0 + 300, lambda agents, into: 100 + 10 * agents)
    agents = [s["agents"] for s in plan.steps]
    steps = [b - a for a, b in zip(agents[:-1], agents[1:], strict=True)]
    assert steps[:3] == [1, 2, 4]  # doubling while far from the budget
    assert max(steps) > 4 and steps[-1] < max(steps)  # then smaller near it
    assert plan.binding == MEMORY and agents[-1] == 100 and 100 + 10 * agents[-2] < 1100


def test_without_a_baseline_the_first_step_has_agents():
    plan = FitPlan(params(baseline_s=0.0, max_agents=1), (), T0)
    assert plan.agents == 1


def options(**given) -> SimpleNamespace:
    return SimpleNamespace(**({"load_profile": "fit"} | given))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"cpu_limit": "150%"}, "--cpu-limit '150%': a percentage above 0 and at most 100"),
        ({"project": "4GiB"}, "--project '4GiB': '4GiB' is not MEMORY,Ncores (e.g. 4GiB,2cores)"),
        ({"min_available": "lots"}, "--min-available 'lots': 'lots' is not a size"),
        ({"step_agents": "0"}, "--step-agents '0'"),
    ],
)
def test_bad_fit_options_are_one_line_before_any_load(given, message):
    with pytest.raises(ProfileConfigError) as err:
        read_limits(options(**given))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_max_hold_shorter_than_the_least_hold_is_refused():
    with pytest.raises(ProfileConfigError, match="--step-max-hold 2s is shorter than --step-every 4s"):
        fit.build(read_limits(options(step_max_hold="2s")), SharedOptions(step_every_s=4.0))


def test_the_profile_is_built_from_the_options_and_reads_the_shared_step_and_cap():
    profile = build_profile(
        None,
        options(
            step_agents="auto", step_every="5s", max_agents="40", memory_budget="1GiB", project="4GiB,2cores"
        ),
    )
    p = profile.params
    assert (p.step_agents, p.step_every_s, p.max_hold_s, p.max_agents) == (None, 5.0, 15.0, 40)
    assert p.memory_budget_bytes == 1024 * MIB and profile.one_process and profile.peak_users() == 40
    assert ignored_options("fit", profile_options(step_users="2")) == ["--step-users"]


def profile_options(**given):
    from scenarios.options import read_options

    return read_options(options(**given))
