"""The open model: arrival schedule arithmetic and the pacer's dropped-arrival count."""

from __future__ import annotations

import pytest

from scenarios.arrivals import ArrivalSchedule, Pacer
from scenarios.shape import Stage


def test_constant_rate_spaces_arrivals_evenly_and_counts_them():
    s = ArrivalSchedule([Stage(0, 4, "x"), Stage(10, 4, "x")])
    assert s.total == pytest.approx(40)
    assert [s.time_of(k) for k in (0, 1, 2, 39)] == pytest.approx([0, 0.25, 0.5, 9.75])
    assert s.time_of(40) is None


def test_linear_ramp_places_arrivals_on_the_integral_of_the_rate():
    s = ArrivalSchedule([Stage(10, 10, "ramp")])  # rate = t, expected = t^2 / 2
    assert s.total == pytest.approx(50)
    assert s.time_of(8) == pytest.approx(4.0)
    assert s.time_of(32) == pytest.approx(8.0)
    assert s.expected(6) == pytest.approx(18)


def test_ramp_down_is_solved_without_cancellation():
    s = ArrivalSchedule([Stage(0, 10, "j"), Stage(10, 0, "down")])  # rate 10 - t
    for k in (0, 10, 30, 49):
        t = s.time_of(k)
        assert s.expected(t) == pytest.approx(k, abs=1e-9)


def test_pacer_hands_out_each_arrival_once_when_agents_keep_up():
    pacer = Pacer(ArrivalSchedule([Stage(0, 2, "x"), Stage(5, 2, "x")]), start_ts=100.0)
    starts = []
    while (ts := pacer.claim(max(starts[-1] if starts else 100.0, 100.0))) is not None:
        starts.append(ts)
    assert starts == pytest.approx([100 + 0.5 * k for k in range(10)])
    assert (pacer.issued, pacer.dropped) == (10, 0)


def test_pacer_drops_arrivals_due_while_every_agent_was_busy():
    pacer = Pacer(ArrivalSchedule([Stage(0, 10, "x"), Stage(10, 10, "x")]), start_ts=0.0, late_after_s=1.0)
    assert pacer.claim(0.0) == 0.0  # the only agent takes arrival 0 and is busy for 5 s
    nxt = pacer.claim(5.0)  # arrivals due before 4.0 s (the late limit) were dropped: 1..39
    assert pacer.dropped == 39 and nxt == pytest.approx(4.0)
    assert pacer.settle(20.0) == 39 + 59  # nobody came back: 41..99 are dropped too
    assert pacer.claim(20.0) is None


def test_slightly_late_arrivals_within_the_tolerance_are_still_started():
    pacer = Pacer(ArrivalSchedule([Stage(0, 1, "x"), Stage(10, 1, "x")]), start_ts=0.0, late_after_s=1.0)
    pacer.claim(0.0)
    assert pacer.claim(1.9) == pytest.approx(1.0) and pacer.dropped == 0
