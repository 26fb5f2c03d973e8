"""The web UI's start form without a web server: each start begins from the command line's options, the
preview builds what START would run (or names the bad value), and marks what the last start left in it.
Locust's real parser with the kit's options; the settings through the kit's one conversion (refresh)."""

from __future__ import annotations

from kit.settings import read_settings, refresh
from kit.start_form import StartForm, preview

FIELDS = {
    "load_profile": {"choices": ["manual", "smoke", "spike"]},
    "ramp": {},
    "threshold": {},
    "peak_users": {},
}


def _form(**fields: str) -> dict[str, str]:
    """What Locust's form posts: every field, empty when not filled in."""
    return {"user_count": "1", "spawn_rate": "1", "run_time": "", "load_profile": "manual", "ramp": ""} | {
        "threshold": "",
        "peak_users": "",
        **fields,
    }


def test_a_start_begins_from_the_command_line_not_from_the_last_start(parse):
    options = parse("--threshold", "ttft_ms p95 < 900", "-t", "60")
    form = StartForm.of(options, FIELDS)
    options.threshold, options.ramp, options.run_time = "latency_ms p50 < 1", "10s", 5  # the last start's
    form.begin(options, {"load_profile": "smoke"})  # a partial POST /swarm
    assert (options.threshold, options.ramp, options.run_time) == (["ttft_ms p95 < 900"], None, 60)


def test_the_preview_builds_the_profile_and_thresholds_the_start_would_run(parse):
    options = parse()
    settings = read_settings(options, "run-1")
    form = StartForm.of(options, FIELDS)
    answer = preview(
        form,
        options,
        _form(load_profile="spike", ramp="10s", threshold="ttft_ms p95 < 500 abort grace=5s"),
        lambda ns: refresh(settings, ns),
        None,
    )
    assert answer["profile"] == "spike" and answer["error"] is None
    assert answer["params_shown"]["jump_s"] == "10s" and answer["params_shown"]["hold_s"] == "30s"
    assert answer["thresholds"] == ["ttft_ms p95 < 500 abort grace=5s"]
    bad = preview(form, options, _form(peak_users="many"), lambda ns: refresh(settings, ns), None)
    assert bad["error"].startswith("--peak-users 'many'") and "profile" not in bad


def test_values_the_last_start_left_in_the_form_are_marked_carried(parse):
    options = parse()
    settings = read_settings(options, "run-1")
    form = StartForm.of(options, FIELDS)
    last = _form(ramp="10s", threshold="ttft_ms p95 < 500")
    form.begin(options, last)
    answer = preview(form, options, last | {"peak_users": "4"}, lambda ns: refresh(settings, ns), "run-1")
    # the profile's first choice is what a fresh form shows, the peak typed now is not the last start's
    assert answer["carried"] == [
        {"field": "ramp", "value": "10s"},
        {"field": "threshold", "value": last["threshold"]},
    ]
    assert answer["from_run"] == "run-1"
    assert preview(form, options, _form(), lambda ns: refresh(settings, ns), "run-1")["carried"] == []


def test_a_list_option_is_one_text_the_preview_and_the_start_read_alike(parse):
    exprs = ["ttft_ms p95 < 900", "latency_ms p95 < 2000"]
    options = parse("--threshold", exprs[0], "--threshold", exprs[1])
    settings = read_settings(options, "run-1")
    form = StartForm.of(options, FIELDS)
    shown = form.initial["threshold"]
    assert shown == "ttft_ms p95 < 900; latency_ms p95 < 2000"
    answer = preview(form, options, _form(threshold=shown), lambda ns: refresh(settings, ns), "run-1")
    assert (answer["error"], answer["thresholds"], answer["carried"]) == (None, exprs, [])
    form.begin(options, _form(threshold=shown))
    assert options.threshold is None  # so Locust's /swarm keeps the text (a list's it splits on ",")
    options.threshold = shown  # as /swarm applies the field
    assert [th.expr for th in refresh(settings, options).thresholds] == exprs
