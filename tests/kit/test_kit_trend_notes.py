"""The end-of-run trend judgement: a slope threshold whose bar is under the run's detectable slope, and
a leak verdict that "cannot tell at this length", are left not judged (exit 8) with the soak that would
judge them; a bar the run could see is judged."""

from __future__ import annotations

from analysis.soak import CANNOT_TELL
from kit.judge import final_trends
from scenarios.thresholds import parse_threshold
from tests.synthetic import soak_samples, write_run_dir


def _run(tmp_path, samples):
    """A run judged with --trend-min-duration 5m: 700 s of samples reach it."""
    return write_run_dir(tmp_path / "run", {"trend_min_duration_s": 300}, samples=samples)


def _thresholds(*exprs: str):
    return tuple(parse_threshold(e, "--threshold") for e in exprs)


def test_bars_under_the_detectable_slope_are_not_judged_and_say_which_soak_would(tmp_path):
    noisy = soak_samples(700, 1.0, noise_mib=6.0, seed=2)  # flat, noisy: ~20 MiB/h detectable
    gates = _thresholds(
        "target_rss_slope_mib_per_h < 10", "target_rss_slope_mib_per_h < 500", "memory_leak == 0"
    )
    values, notes = final_trends(_run(tmp_path, noisy), gates)
    assert values["target_rss_slope_mib_per_h"][0] is not None
    assert set(notes) == {"target_rss_slope_mib_per_h < 10", "memory_leak == 0"}, notes
    assert "not 10: a soak of about" in notes["target_rss_slope_mib_per_h < 10"]
    assert "not 10:" in notes["memory_leak == 0"]


def test_a_run_that_can_see_the_bar_leaves_no_note(tmp_path):
    quiet = soak_samples(700, 1.0, leak_mib_per_h=0.0, noise_mib=0.2, seed=2)
    values, notes = final_trends(
        _run(tmp_path, quiet), _thresholds("target_rss_slope_mib_per_h < 10", "memory_leak == 0")
    )
    assert notes == {} and values["memory_leak"][0] == 0.0


def test_the_cannot_tell_verdict_is_the_one_the_notes_read(tmp_path):
    from analysis.load import load_run
    from analysis.soak import soak_trends

    run_dir = _run(tmp_path, soak_samples(700, 1.0, noise_mib=6.0, seed=2))
    assert soak_trends(load_run(run_dir))[0].verdict == CANNOT_TELL


def test_a_slope_clearly_above_the_bar_fails_however_noisy_the_run(tmp_path):
    noisy_leak = soak_samples(700, 1.0, leak_mib_per_h=3000.0, noise_mib=6.0, seed=2)
    values, notes = final_trends(_run(tmp_path, noisy_leak), _thresholds("target_rss_slope_mib_per_h < 10"))
    assert notes == {} and values["target_rss_slope_mib_per_h"][0] > 10
