"""Each load profile's shape, tick by tick: users, spawn rate and phase over elapsed time."""

from __future__ import annotations

import re

import pytest

from scenarios.errors import ProfileConfigError
from scenarios.options import MAX_USERS, ProfileOptions
from scenarios.registry import build_profile


def ticks(profile, times):
    return [
        None if (t := profile.tick(s)) is None else (t.users, round(t.spawn_rate, 3), t.phase) for s in times
    ]


def test_smoke_defaults_hold_three_users_for_thirty_seconds():
    p = build_profile("smoke", ProfileOptions())
    assert ticks(p, [0, 1, 29.9, 30]) == [(3, 3, "plateau"), (3, 3, "plateau"), (3, 3, "plateau"), None]


def test_average_ramps_ten_percent_of_the_run_then_holds_then_ramps_down():
    p = build_profile("average", ProfileOptions(peak_users=10, duration_s=100))
    assert ticks(p, [0, 9.9, 10, 89.9, 90, 99.9, 100]) == [
        (10, 1.0, "ramp-up"),
        (10, 1.0, "ramp-up"),
        (10, 1.0, "plateau"),
        (10, 1.0, "plateau"),
        (0, 1.0, "ramp-down"),
        (0, 1.0, "ramp-down"),
        None,
    ]
    assert [(ph.name, ph.start_s, ph.end_s) for ph in p.phases()] == [
        ("ramp-up", 0, 10),
        ("plateau", 10, 90),
        ("ramp-down", 90, 100),
    ]


def test_average_default_is_ten_users_for_five_minutes_with_thirty_second_ramps():
    p = build_profile("average", ProfileOptions())
    assert ticks(p, [0, 30, 270, 300]) == [
        (10, 0.333, "ramp-up"),
        (10, 0.333, "plateau"),
        (0, 0.333, "ramp-down"),
        None,
    ]


@pytest.mark.parametrize(
    ("opts", "ramp", "hold", "duration"),
    [
        (ProfileOptions(ramp_s=20, hold_s=60), 20, 60, 100),
        (ProfileOptions(duration_s=100, hold_s=50), 25, 50, 100),
        (ProfileOptions(duration_s=100, ramp_s=5), 5, 90, 100),
        (ProfileOptions(hold_s=80), 10, 80, 100),
    ],
)
def test_average_fills_in_the_missing_one_of_ramp_hold_duration(opts, ramp, hold, duration):
    p = build_profile("average", opts).params
    assert (p.ramp_s, p.hold_s, p.duration_s) == pytest.approx((ramp, hold, duration))


@pytest.mark.parametrize(
    "opts",
    [
        ProfileOptions(duration_s=60, ramp_s=40),
        ProfileOptions(duration_s=60, hold_s=90),
        ProfileOptions(duration_s=60, ramp_s=10, hold_s=10),
    ],
)
def test_average_rejects_ramps_and_holds_that_do_not_fit(opts):
    with pytest.raises(ProfileConfigError):
        build_profile("average", opts)


def test_stress_is_twenty_users_and_soak_is_ten_users_for_an_hour():
    stress, soak = build_profile("stress", ProfileOptions()), build_profile("soak", ProfileOptions())
    assert stress.tick(150).users == 20 and stress.end_s == 300
    assert soak.tick(1800).users == 10 and soak.end_s == 3600
    assert soak.params.ramp_s == 180


def test_spike_jumps_from_base_to_spike_holds_drops_and_recovers():
    p = build_profile("spike", ProfileOptions(base_users=5, spike_users=40, ramp_s=1, hold_s=20, settle_s=10))
    assert ticks(p, [0, 9.9, 10, 11, 30.9, 31, 32, 41.9, 42]) == [
        (5, 5, "steady"),
        (5, 5, "steady"),
        (40, 35, "spike"),
        (40, 35, "spike"),
        (40, 35, "spike"),
        (5, 35, "drop"),
        (5, 35, "recovery"),
        (5, 35, "recovery"),
        None,
    ]
    assert [ph.name for ph in p.phases()] == ["steady", "spike", "drop", "recovery"]


def test_spike_default_is_five_to_forty_to_five():
    p = build_profile("spike", ProfileOptions())
    assert sorted({p.tick(t).users for t in range(int(p.end_s))}) == [5, 40]


def test_spike_must_rise_above_base():
    with pytest.raises(ProfileConfigError, match="--spike-users"):
        build_profile("spike", ProfileOptions(base_users=10, spike_users=10))


def test_breakpoint_adds_one_user_every_ten_seconds_up_to_its_cap():
    p = build_profile("breakpoint", ProfileOptions(peak_users=5))
    assert [p.tick(t).users for t in (0, 9.9, 10, 19.9, 20, 49.9)] == [1, 1, 2, 2, 3, 5]
    assert p.tick(50) is None
    assert build_profile("breakpoint", ProfileOptions()).end_s == 2000


def test_breakpoint_steps_are_configurable_and_the_last_step_is_capped():
    p = build_profile("breakpoint", ProfileOptions(peak_users=10, step_users=4, step_every_s=5))
    assert ticks(p, [0, 5, 10, 14.9, 15]) == [
        (4, 4, "ramp"),
        (8, 4, "ramp"),
        (10, 2, "ramp"),
        (10, 2, "ramp"),
        None,
    ]


def test_stop_point_records_time_and_planned_users():
    from scenarios.breakpoint import stop_point

    p = build_profile("breakpoint", ProfileOptions(step_users=2, step_every_s=10))
    stop = stop_point(p, 35.0, 1000.0, "target_rss_bytes max < 1GiB", running_users=7)
    assert (stop.t_s, stop.planned_users, stop.running_users) == (35.0, 8, 7)


def test_explicit_stages_override_the_shape_k6_style():
    p = build_profile("average", ProfileOptions(stages="30s:10,1m:10,10s:0"))
    assert ticks(p, [0, 30, 89, 90, 100]) == [
        (10, 0.333, "ramp-up"),
        (10, 0.333, "plateau"),
        (10, 0.333, "plateau"),
        (0, 1.0, "ramp-down"),
        None,
    ]


@pytest.mark.parametrize("stages", ["30s10", "3x:10", "30s:-1", "30s:ten"])
def test_bad_stage_lists_name_the_item(stages):
    with pytest.raises(ProfileConfigError, match="--stages item 1"):
        build_profile("smoke", ProfileOptions(stages=stages))


def test_baseline_prepends_an_idle_phase():
    p = build_profile("smoke", ProfileOptions(baseline_s=10, duration_s=20))
    assert ticks(p, [0, 9.9, 10, 29.9, 30]) == [
        (0, 1, "baseline"),
        (0, 1, "baseline"),
        (3, 3, "plateau"),
        (3, 3, "plateau"),
        None,
    ]


def test_manual_follows_locusts_u_r_t():
    p = build_profile("manual", ProfileOptions(num_users=10, spawn_rate=2, run_time_s=60))
    assert ticks(p, [0, 4.9, 5, 59.9, 60]) == [
        (10, 2, "ramp-up"),
        (10, 2, "ramp-up"),
        (10, 2, "plateau"),
        (10, 2, "plateau"),
        None,
    ]
    assert [(ph.name, ph.end_s) for ph in p.phases()] == [("ramp-up", 5), ("plateau", 60)]


def test_manual_without_run_time_never_ends():
    p = build_profile("manual", ProfileOptions())
    assert p.tick(10**7) is not None and p.phases()[-1].end_s is None


def test_open_model_asks_for_the_agent_pool_and_scales_the_shape_to_the_arrival_rate():
    p = build_profile(
        "spike", ProfileOptions(arrival_rate=20, max_agents=4, settle_s=10, hold_s=10, ramp_s=1)
    )
    assert ticks(p, [0, 10.5, 40]) == [(4, 4, "steady"), (4, 4, "spike"), None]
    assert p.schedule.rate(5) == pytest.approx(2.5) and p.schedule.rate(15) == pytest.approx(20)


def test_unknown_profile_is_one_line():
    with pytest.raises(ProfileConfigError, match="unknown profile 'soakk': choose one of"):
        build_profile("soakk", ProfileOptions())


@pytest.mark.parametrize(
    "name, options",
    [
        ("smoke", ProfileOptions(stages="1s:1000000,2s:0")),
        ("average", ProfileOptions(stages="1s:10,1s:10001")),
        ("spike", ProfileOptions(stages="1s:20000")),
        ("breakpoint", ProfileOptions(stages="10s:5,0s:1000000")),
        ("soak", ProfileOptions(stages="1s:20000", arrival_rate=1.0)),  # the open model's agent pool
        ("sweep", ProfileOptions(max_agents=20000)),  # a profile added later is capped by the same check
    ],
)
def test_every_profile_passes_the_one_user_cap(name, options):
    with pytest.raises(ProfileConfigError, match=f"more than {MAX_USERS} in one load generator"):
        build_profile(name, options)


def test_the_cap_itself_is_allowed():
    assert build_profile("smoke", ProfileOptions(stages=f"1s:{MAX_USERS}")).peak_users() == MAX_USERS


@pytest.mark.parametrize(
    "name, opts, message",
    [
        ("smoke", ProfileOptions(stages="0s:0"), "its stages last 0s in all"),
        ("average", ProfileOptions(stages="0s:5,0s:0", baseline_s=10.0), "its stages last 0s in all"),
        ("average", ProfileOptions(ramp_s=0.0, hold_s=0.0), "its stages last 0s in all"),
        ("sweep", ProfileOptions(profile="sweep", hold_s=0.0), "--hold 0s: each pass must last longer"),
        ("manual", ProfileOptions(num_users=2, run_time_s=0.0), "-t/--run-time 0s: a run must last longer"),
    ],
)
def test_a_profile_that_would_end_as_it_starts_or_never_is_refused(name, opts, message):
    """Every profile's time is finite and known at start: zero stages and zero holds are refused (a sweep's
    --hold 0s was taken as the default 30s and ran for 5 minutes)."""
    with pytest.raises(ProfileConfigError, match=re.escape(message)):
        build_profile(name, opts)
    assert build_profile("sweep", ProfileOptions(profile="sweep", hold_s=2.0)).end_s == 20.0
