"""The open model: arrival schedule arithmetic, the seeded arrival processes (constant, Poisson, gamma)
following the shape and split across load generators, and the pacer's dropped-arrival count."""

from __future__ import annotations

import statistics

import pytest

from scenarios.arrival_process import ArrivalProcess, arrival_timing, share_of, trace_timing
from scenarios.arrivals import ArrivalSchedule, Pacer
from scenarios.errors import ProfileConfigError
from scenarios.open_model import OpenModelProfile, pacer_from_doc
from scenarios.shape import Stage, StagedProfile

CONSTANT = ArrivalProcess()


def steady(rate: float, seconds: float) -> ArrivalSchedule:
    return ArrivalSchedule([Stage(0, rate, "x"), Stage(seconds, rate, "x")])


def gaps(process: ArrivalProcess, rate: float, seconds: float) -> list[float]:
    times = [t for _, t in arrival_timing(steady(rate, seconds), process)]
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def cv(values: list[float]) -> float:
    return statistics.pstdev(values) / statistics.fmean(values)


def test_constant_rate_spaces_arrivals_evenly_and_counts_them():
    s = steady(4, 10)
    assert s.total == pytest.approx(40)
    times = [t for _, t in arrival_timing(s, CONSTANT)]
    assert len(times) == 40 and times[:3] + times[-1:] == pytest.approx([0, 0.25, 0.5, 9.75])
    assert s.time_at(40) is None


def test_linear_ramp_places_arrivals_on_the_integral_of_the_rate():
    s = ArrivalSchedule([Stage(10, 10, "ramp")])  # rate = t, expected = t^2 / 2
    assert s.total == pytest.approx(50)
    assert s.time_at(8) == pytest.approx(4.0)
    assert s.time_at(32) == pytest.approx(8.0)
    assert s.expected(6) == pytest.approx(18)


def test_ramp_down_is_solved_without_cancellation():
    s = ArrivalSchedule([Stage(0, 10, "j"), Stage(10, 0, "down")])  # rate 10 - t
    for k in (0, 10, 30, 49):
        t = s.time_at(k)
        assert s.expected(t) == pytest.approx(k, abs=1e-9)


def test_poisson_at_10_per_s_for_60_s_has_mean_gap_a_tenth_of_a_second_and_cv_1():
    """The default seed's sequence (what a run without --arrival-seed paces). ±5 % on the mean of 600
    gaps is about 1.2 standard errors: the pooled test below checks the process itself."""
    g = gaps(ArrivalProcess("poisson"), 10, 60)
    assert statistics.fmean(g) == pytest.approx(0.1, rel=0.05)
    assert 0.9 <= cv(g) <= 1.1


def test_gamma_with_burstiness_a_quarter_has_cv_2():
    g = gaps(ArrivalProcess("gamma", burstiness=0.25), 10, 60)
    assert cv(g) == pytest.approx(2.0, rel=0.10)


@pytest.mark.parametrize(("kind", "burstiness", "want_cv"), [("poisson", 1.0, 1.0), ("gamma", 0.25, 2.0)])
def test_over_many_seeds_the_gaps_have_the_asked_mean_and_cv(kind, burstiness, want_cv):
    """20 seeds x 60 s at 10/s (~12,000 gaps): mean within 3 %, CV within 5 % (both > 3 standard errors)."""
    g = [x for seed in range(20) for x in gaps(ArrivalProcess(kind, burstiness, seed), 10, 60)]
    assert statistics.fmean(g) == pytest.approx(0.1, rel=0.03)
    assert cv(g) == pytest.approx(want_cv, rel=0.05)


def test_the_same_seed_gives_the_same_arrivals_and_another_seed_others():
    one, again = (gaps(ArrivalProcess("poisson", seed=7), 10, 5) for _ in range(2))
    assert one == again and one != gaps(ArrivalProcess("poisson", seed=8), 10, 5)


def test_a_random_process_follows_the_shape_of_the_rate():
    """A ramp 0 -> 20/s over 60 s, 10 seeds: 600 arrivals each, a quarter of them in the first half
    (bars > 3 standard errors)."""
    ramp = ArrivalSchedule([Stage(60, 20, "ramp")])
    times = [t for seed in range(10) for _, t in arrival_timing(ramp, ArrivalProcess("poisson", seed=seed))]
    assert len(times) / 10 == pytest.approx(600, rel=0.04)
    assert sum(t < 30 for t in times) / len(times) == pytest.approx(0.25, abs=0.02)


def test_shares_of_load_generators_together_are_exactly_the_process():
    """Three workers' shares are disjoint and their union is the one gamma process: its CV survives the
    split (three independent gamma processes summed would drift towards Poisson)."""
    process = ArrivalProcess("gamma", burstiness=0.25, seed=1)
    whole = list(arrival_timing(steady(10, 300), process))
    parts = [list(share_of(arrival_timing(steady(10, 300), process), i, 3)) for i in range(3)]
    assert sorted(a for part in parts for a in part) == whole
    assert {len(p) for p in parts} <= {len(whole) // 3, len(whole) // 3 + 1}


def test_a_worker_paces_its_share_of_the_open_models_arrivals():
    profile = OpenModelProfile(StagedProfile("smoke", {}, [Stage(0, 1, "p"), Stage(10, 1, "p")]), 4, 8)
    pacers = [pacer_from_doc(profile.share_doc(i, 2, start_ts=100.0)) for i in range(2)]
    due = sorted(a.due_ts for p in pacers for a in iter(lambda p=p: p.claim(100.0), None))
    assert due == pytest.approx([100 + 0.25 * k for k in range(40)])


def test_a_trace_is_paced_at_its_offsets_sped_up():
    assert list(trace_timing([0.0, 1.0, 3.0], speedup=2)) == [(0, 0.0), (1, 0.5), (2, 1.5)]


def test_burstiness_must_be_positive_and_the_process_known():
    with pytest.raises(ProfileConfigError, match="--burstiness"):
        ArrivalProcess("gamma", burstiness=0)
    with pytest.raises(ProfileConfigError, match="--arrivals 'bursty'"):
        ArrivalProcess("bursty")


def test_pacer_hands_out_each_arrival_once_when_agents_keep_up():
    pacer = Pacer(arrival_timing(steady(2, 5), CONSTANT), start_ts=100.0)
    starts: list[float] = []
    while (a := pacer.claim(max(starts[-1] if starts else 100.0, 100.0))) is not None:
        starts.append(a.due_ts)
    assert starts == pytest.approx([100 + 0.5 * k for k in range(10)])
    assert (pacer.issued, pacer.dropped, pacer.first_dropped_ts) == (10, 0, None)


def test_pacer_drops_arrivals_due_while_every_agent_was_busy():
    pacer = Pacer(arrival_timing(steady(10, 10), CONSTANT), start_ts=0.0, late_after_s=1.0)
    assert pacer.claim(0.0).due_ts == 0.0  # the only agent takes arrival 0 and is busy for 5 s
    nxt = pacer.claim(5.0)  # arrivals due before 4.0 s (the late limit) were dropped: 1..39
    assert pacer.dropped == 39 and nxt.due_ts == pytest.approx(4.0) and nxt.index == 40
    assert pacer.first_dropped_ts == pytest.approx(0.1)
    assert pacer.settle(20.0) == 39 + 59  # nobody came back: 41..99 are dropped too
    assert pacer.claim(20.0) is None


def test_slightly_late_arrivals_within_the_tolerance_are_still_started():
    pacer = Pacer(arrival_timing(steady(1, 10), CONSTANT), start_ts=0.0, late_after_s=1.0)
    pacer.claim(0.0)
    assert pacer.claim(1.9).due_ts == pytest.approx(1.0) and pacer.dropped == 0
