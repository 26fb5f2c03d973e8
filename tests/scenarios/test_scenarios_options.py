"""The kit's options on Locust's own parser: names, web-UI dropdown, string values read into types."""

from __future__ import annotations

import pytest
from locust.argument_parser import get_empty_argument_parser, setup_parser_arguments, ui_extra_args_dict

from scenarios.errors import ProfileConfigError, ThresholdConfigError
from scenarios.options import read_options
from scenarios.registry import PROFILE_NAMES, add_arguments, build_profile, build_thresholds
from scenarios.thresholds import MAX_THRESHOLDS


@pytest.fixture
def parser():
    p = get_empty_argument_parser()
    setup_parser_arguments(p)
    add_arguments(p)
    return p


def test_options_register_on_locusts_parser_without_clashing(parser):
    ns = parser.parse_args(
        [
            "--load-profile",
            "spike",
            "--spike-users",
            "60",
            "--ramp",
            "2s",
            "--threshold",
            "error_rate < 0.01",
            "--threshold",
            "ttft_ms p95 < 500 abort",
            "-u",
            "7",
        ]
    )
    opts = read_options(ns)
    assert (opts.profile, opts.spike_users, opts.ramp_s, opts.num_users) == ("spike", 60, 2.0, 7)
    assert opts.threshold_exprs == ("error_rate < 0.01", "ttft_ms p95 < 500 abort")


def test_load_profile_is_a_dropdown_in_the_web_ui(parser, monkeypatch):
    monkeypatch.setattr("locust.argument_parser.get_parser", lambda: parser)
    extra = ui_extra_args_dict([])
    assert extra["load_profile"]["choices"] == list(PROFILE_NAMES)
    assert {"peak_users", "stages", "rounds", "arrival_rate", "threshold"} <= set(extra)


def test_unknown_profile_name_is_refused_by_the_parser(parser):
    with pytest.raises(SystemExit):
        parser.parse_args(["--load-profile", "nope"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--ramp", "3x"], "--ramp '3x': '3x' is not a duration"),
        (["--peak-users", "0"], "--peak-users '0': must be at least 1"),
        (["--peak-users", "ten"], "--peak-users 'ten': must be a whole number"),
        (["--rounds", "6,x"], "--rounds '6,x'"),
        (["--arrival-rate", "-1"], "--arrival-rate '-1': must be a finite number > 0"),
        (["--duration", "0s"], "--duration '0s': must be longer than 0s"),
    ],
)
def test_malformed_values_name_the_option_in_one_line(parser, argv, message):
    with pytest.raises(ProfileConfigError) as err:
        read_options(parser.parse_args(argv))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_web_ui_strings_empty_fields_and_semicolon_separated_thresholds_are_understood(parser):
    ns = parser.parse_args([])
    ns.load_profile, ns.peak_users, ns.hold, ns.threshold = (
        "average",
        "12",
        "",
        "error_rate < 0.01; ttft_ms p95 < 9",
    )
    assert build_profile(None, ns).tick(60).users == 12
    assert [t.expr for t in build_thresholds(ns)] == ["error_rate < 0.01", "ttft_ms p95 < 9"]


def test_arrival_rate_does_not_apply_to_rounds(parser):
    with pytest.raises(ProfileConfigError, match="--arrival-rate does not apply"):
        build_profile(None, parser.parse_args(["--load-profile", "rounds", "--arrival-rate", "5"]))


@pytest.mark.parametrize("flag", ["--duration", "--hold", "--ramp", "--round-hold"])
def test_a_duration_beyond_thirty_days_is_refused(parser, flag):
    assert read_options(parser.parse_args([flag, "720h"])) is not None  # the maximum itself
    with pytest.raises(ProfileConfigError, match="longer than the maximum, 30 days"):
        read_options(parser.parse_args([flag, "999999999h"]))


def test_more_thresholds_than_the_cap_are_refused(parser):
    many = [item for n in range(MAX_THRESHOLDS + 1) for item in ("--threshold", f"latency_ms p95 < {n + 1}")]
    assert len(build_thresholds(parser.parse_args(many[2:]))) == MAX_THRESHOLDS
    with pytest.raises(ThresholdConfigError, match=f"at most {MAX_THRESHOLDS} per run"):
        build_thresholds(parser.parse_args(many))
