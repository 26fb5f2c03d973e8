"""The cockpit's live picture without a Locust process: known rows in, known series, fit, percentiles
and Prometheus text out; and the manual profile's EDIT."""

from __future__ import annotations

import csv

import pytest
from prometheus_client.parser import text_string_to_metric_families

from contract import schema
from kit.judge import LiveJudge
from kit.live import FINISHED, RUNNING, LiveRun
from kit.prometheus import FAMILIES, exposition
from kit.session import Session
from kit.settings import RunNames
from lifecycle.target import Target
from scenarios.manual import ManualParams, ManualProfile
from scenarios.slo import parse_slo
from scenarios.thresholds import parse_threshold


def _write(path, columns, rows):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def test_capacity_fit_recovers_a_known_slope(tmp_path):
    rows = [{"n": 0, "event": "baseline", "rss_bytes": 90 * schema.MIB}]
    rows += [{"n": n, "event": "ready", "rss_bytes": (100 + 2.5 * n) * schema.MIB} for n in range(1, 9)]
    _write(tmp_path / schema.CAPACITY_CSV, schema.CAPACITY_COLUMNS, rows)
    live = LiveRun("r1", tmp_path, {})
    live.update()
    capacity = live.capacity()
    assert len(capacity["points"]) == 9  # the baseline is drawn, not fitted
    assert capacity["fit"]["slope_mib_per_agent"] == pytest.approx(2.5)
    assert capacity["fit"]["intercept_mib"] == pytest.approx(100)


def test_rss_series_and_percentile_windows_follow_the_rows(tmp_path):
    samples = [{"ts": 1000 + i, "target_rss_bytes": (50 + i) * schema.MIB} for i in range(5)]
    _write(tmp_path / schema.SAMPLES_CSV, schema.SAMPLE_COLUMNS, samples)
    live = LiveRun("r1", tmp_path, {"start_ts": 1000})
    for i in range(1, 21):  # one 2-second window: TTFT 10, 20, ... 200 ms; latency 10x; every 5th failed
        row = {"ts": 1000.5, "ttft_ms": 10 * i, "latency_ms": 100 * i, "ok": int(i % 5 != 0)}
        live.on_row(schema.REQUESTS_CSV, row)
    live.on_row(schema.REQUESTS_CSV, {"ts": 1000.5, "ok": 0, "error_kind": schema.ERROR_INTERRUPTED})
    live.on_users(1001, 3, 4)
    snap = live.snapshot(now=1005)
    memory = next(c for c in snap["charts"] if c["key"] == "memory")
    assert memory["series"][0]["points"][-1] == (1004, 54.0)
    latest = snap["latest"]
    assert latest["target_rss_bytes"] == 54 * schema.MIB
    assert (latest["ttft_p50_ms"], latest["ttft_p95_ms"], latest["ttft_p99_ms"]) == (100, 190, 200)
    assert (latest["latency_p50_ms"], latest["latency_window_samples"], latest["ttft_window_samples"]) == (
        1000,
        20,
        20,
    )
    assert (latest["users"], latest["target_users"]) == (3, 4)
    assert (latest["requests_total"], latest["errors_total"]) == (21, 4)  # the interrupted one: no error


def test_a_capacity_run_charts_the_agents_its_driver_opens_not_the_one_user(tmp_path):
    rows = [{"ts": 1000 + n, "n": n, "event": "ready", "rss_bytes": (100 + n) * schema.MIB} for n in range(6)]
    _write(tmp_path / schema.CAPACITY_CSV, schema.CAPACITY_COLUMNS, rows)
    live = LiveRun("r1", tmp_path, {"start_ts": 1000})
    live.on_users(1001, 1, 1)
    [users] = [c for c in live.snapshot(now=1006)["charts"] if c["key"] == "users"]
    assert users["title"].startswith("agents") and [s["name"] for s in users["series"]] == ["agents"]
    assert users["series"][0]["points"][-1] == (1005, 5)


def test_thresholds_and_parameters_read_in_human_units(tmp_path):
    judge = LiveJudge(
        [parse_threshold("target_rss_bytes max < 200MiB", "#1"), parse_threshold("ttft_ms count > 10", "#2")],
        1000,
        tmp_path / schema.SAMPLES_CSV,
        lambda _now: 0,
    )
    _write(
        tmp_path / schema.SAMPLES_CSV, schema.SAMPLE_COLUMNS, [{"ts": 1001, "target_rss_bytes": 192090112}]
    )
    judge.judge(1002)
    live = LiveRun(
        "r1", tmp_path, {"profile": {"params": {"memory_budget_bytes": schema.GIB, "hold_s": 270}}}
    )
    live.judge = judge
    rss, count = live.thresholds()
    assert (rss["shown_value"], rss["shown_limit"], rss["state"]) == ("183.2 MiB", "200 MiB", "ok")
    assert count["shown_limit"] == "10"  # a count of requests, whatever the metric's unit
    assert live.run_info()["params_shown"] == {"memory_budget_bytes": "1 GiB", "hold_s": "4m30s"}
    live.params = {"users": 5, "spawn_rate": 2.0}  # what EDIT made of them
    assert live.run_info()["params_shown"] == {"users": "5", "spawn_rate": "2"}


def test_prometheus_text_parses_with_awkward_labels():
    snapshot = {
        "run": {"id": 'run "a"\\b', "active": True, "ended": False, "exit_code": None},
        "latest": {"users": 3.0, "requests_total": 7.0},
        "thresholds": [{"expr": "ttft_ms p95 < 500", "state": "failing", "value": 612.5}],
    }
    families = {f.name: f for f in text_string_to_metric_families(exposition(snapshot))}
    [state] = families["loadkit_threshold_state"].samples
    assert state.labels == {"run_id": 'run "a"\\b', "expr": "ttft_ms p95 < 500"} and state.value == 1
    assert families["loadkit_threshold_value"].samples[0].value == 612.5
    assert families["loadkit_requests"].type == "counter"
    assert families["loadkit_run_active"].samples[0].value == 1


def test_prometheus_keeps_an_ended_run_to_run_active_0_its_exit_code_and_final_counters(tmp_path):
    """Every series of a run carries its id; once it has ended only these remain, so a dashboard sees
    its gauges stop where the run did and its counters end at the rows written (one landed after the
    last scrape of the running run)."""
    _write(tmp_path / schema.SAMPLES_CSV, schema.SAMPLE_COLUMNS, [{"ts": 1001, "target_rss_bytes": 5}])
    live = LiveRun("r7", tmp_path, {"start_ts": 1000})
    live.state = RUNNING
    live.on_users(1001, 2, 2)
    running = {
        s.name: s for f in text_string_to_metric_families(exposition(live.snapshot(1002))) for s in f.samples
    }
    assert running["loadkit_run_active"].value == 1 and "loadkit_target_rss_bytes" in running
    assert {s.labels["run_id"] for s in running.values()} == {"r7"}
    live.on_row(schema.REQUESTS_CSV, {"ts": 1002.5, "ok": 1})
    live.state, live.meta["exit_code"] = FINISHED, 99
    ended = {
        s.name: s.value
        for f in text_string_to_metric_families(exposition(live.snapshot(1003)))
        for s in f.samples
    }
    assert ended == {
        "loadkit_run_active": 0,
        "loadkit_run_exit_code": 99,
        "loadkit_requests_total": 1,
        "loadkit_errors_total": 0,
    }


def test_every_exported_name_is_a_documented_family(tmp_path):
    live = LiveRun("r1", tmp_path, {})
    live.on_row(schema.REQUESTS_CSV, {"ts": 1, "ttft_ms": 5, "latency_ms": 9, "ok": 1})
    live.on_users(1, 1, 1)
    assert set(live.latest()) <= set(FAMILIES)


def test_manual_edit_ramps_from_where_it_stands_then_holds():
    profile = ManualProfile(ManualParams(users=2, spawn_rate=1.0))
    assert profile.tick(1).phase == "ramp-up" and profile.tick(3).phase == "plateau"
    profile.edit(5, 2.0, t=10)  # 3 more users at 2/s: 1.5 s of ramp
    assert (profile.tick(11).users, profile.tick(11).spawn_rate, profile.tick(11).phase) == (
        5,
        2.0,
        "edit 1: ramp to 5",
    )
    assert profile.tick(11.6).phase == "edit 1: hold 5"
    profile.edit(1, 4.0, t=20)
    assert profile.tick(20.5).phase == "edit 2: ramp to 1" and profile.tick(21.1).phase == "edit 2: hold 1"


def test_later_runs_of_a_session_are_named_after_the_first_and_skip_used_directories(tmp_path):
    session = Session(Target(url="http://127.0.0.1:1"), RunNames("nightly", tmp_path / "run", None))
    assert session.next_run("nightly", tmp_path / "run") == ("nightly", tmp_path / "run")
    (tmp_path / "run-2").mkdir()
    (tmp_path / "run-2" / "run.json").write_text("{}")  # left by an earlier session
    assert session.next_run("nightly", tmp_path / "run") == ("nightly-3", tmp_path / "run-3")
    assert (tmp_path / "run-3").is_dir() and list(session.dirs) == ["nightly", "nightly-3"]


def test_tpot_windows_and_goodput_follow_the_rows(tmp_path):
    slo = parse_slo("ttft_ms <= 250", "--slo #1")
    judge = LiveJudge([], 1000.0, tmp_path / schema.SAMPLES_CSV, lambda _now: 0, (slo,))
    live = LiveRun("r1", tmp_path, {"start_ts": 1000})
    live.judge = judge
    for ttft in (200, 220, 300, 240):  # 16 tokens, 20 ms apart after the first
        row = {"ts": 1000.5, "operation": "chat.stream", "ok": 1, "ttft_ms": ttft, "latency_ms": ttft + 300}
        row.update(tokens_out=16, content_tokens=16, content_span_ms=300)
        judge.on_row(schema.REQUESTS_CSV, row)
        live.on_row(schema.REQUESTS_CSV, row)
    snap = live.snapshot(now=1005)
    assert snap["latest"]["tpot_p50_ms"] == pytest.approx(20) and snap["latest"]["goodput"] == 0.75
    goodput = next(c for c in snap["charts"] if c["key"] == "goodput")
    assert goodput["series"][0]["points"][-1][1] == 75  # charted in %
    assert set(snap["latest"]) <= set(FAMILIES)
