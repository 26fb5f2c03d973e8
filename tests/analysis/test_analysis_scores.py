"""Scores from the rows, on run directories with known answers: TPOT, goodput (the same as the live
judge counts), load levels in the run's own unit with the breaking level and its rule, late and dropped
arrivals, and summary.json."""

from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

from analysis.arrivals import arrivals, arrivals_line
from analysis.breaking import first_break
from analysis.goodput import goodput
from analysis.headline import headline
from analysis.latency import tpot_notes
from analysis.levels import ARRIVALS_PER_S, run_levels
from analysis.load import load_run
from analysis.report import write_report
from analysis.scores import TPOT_UNRECORDED, TPOT_WITHHELD
from analysis.summary import console_summary
from contract import schema
from scenarios.slo import Goodput, parse_slo
from tests.synthetic import T0, write_run_dir

SLOS = [parse_slo("ttft_ms <= 300", "--slo #1"), parse_slo("tpot_ms p90 <= 21", "--slo #2")]


def streams(ts: np.ndarray, ok: np.ndarray, ttft: np.ndarray, tpot: float = 20.0, **extra) -> pd.DataFrame:
    """chat.stream rows of 16 output tokens received, the first at TTFT: latency = TTFT + 15 x TPOT."""
    return pd.DataFrame(
        {
            "ts": ts,
            "agent_id": "a",
            "operation": "chat.stream",
            "ok": ok.astype(int),
            "error_kind": np.where(ok, "", "backpressure"),
            "latency_ms": np.where(ok, ttft + 15 * tpot, 3.0),
            "ttft_ms": np.where(ok, ttft, np.nan),
            "tokens_out": np.where(ok, 16, np.nan),
            "content_tokens": np.where(ok, 16, np.nan),
            "content_span_ms": np.where(ok, 15 * tpot, np.nan),
            **extra,
        }
    )


def stepped_open_run(tmp_path, rates=(10, 12, 14, 16, 18), hold_s=10.0, refuse_from=16, meta=None):
    """Constant arrivals stepping through `rates`; above `refuse_from` a tenth of them are refused."""
    frames, points, t = [], [], 0.0
    for rate in rates:
        due = T0 + t + np.arange(0, hold_s, 1 / rate)
        ok = np.ones(due.size, bool)
        if rate >= refuse_from:
            ok[::10] = False
        frames.append(streams(due + 0.002, ok, np.full(due.size, 200.0), start_lateness_ms=2.0))
        points += [[t, rate], [t + hold_s, rate]]
        t += hold_s
    run_meta = {
        "run_id": "open",
        "start_ts": T0,
        "stop_reason": "profile complete",
        "exit_code": 1,
        "profile": {"name": "breakpoint"},
        "open_model": {"start_ts": T0, "rate_points": points, "arrivals": "constant", "issued_arrivals": 0},
        "slos": [s.as_json() for s in SLOS],
    } | (meta or {})
    return write_run_dir(tmp_path, run_meta, requests=pd.concat(frames, ignore_index=True))


def test_tpot_and_goodput_of_known_rows_and_the_live_judge_agrees(tmp_path):
    rng = np.random.default_rng(4)
    n = 400
    ok = rng.random(n) > 0.1
    ttft = rng.uniform(150, 350, n)
    tpot = rng.choice([19.0, 20.0, 22.0], n)
    rows = streams(T0 + np.arange(n) * 0.05, ok, ttft, tpot=0.0)
    rows["latency_ms"] = np.where(ok, ttft + 15 * tpot, 3.0)
    rows["content_span_ms"] = np.where(ok, 15 * tpot, np.nan)
    path = write_run_dir(tmp_path, {"slos": [s.as_json() for s in SLOS]}, requests=rows)
    found = goodput(load_run(path))
    by_hand = ok & (ttft <= 300) & (tpot <= 21)
    assert (found.requests.scored, found.requests.met) == (n, int(by_hand.sum()))
    live = Goodput(tuple(SLOS))
    with open(path / schema.REQUESTS_CSV) as f:
        for row in csv.DictReader(f):
            live.observe_request(row)
    assert live.share() == (found.requests.share, n)


def test_open_model_levels_are_the_asked_arrival_rates_and_the_break_is_the_first_with_errors(tmp_path):
    run = load_run(stepped_open_run(tmp_path))
    levels = run_levels(run)
    assert levels.unit == ARRIVALS_PER_S and list(levels.table.index) == [10, 12, 14, 16, 18]
    assert list(levels.table["requests"]) == [100, 120, 140, 160, 180]
    assert levels.table["achieved_per_s"].tolist() == pytest.approx([10, 12, 14, 16, 18])
    broke = first_break(levels)
    assert (broke.level, broke.unit, broke.error_pct) == (16, ARRIVALS_PER_S, 10.0)
    assert headline(run).verdict.startswith("Yes: it broke at 16 arrivals/s: error rate 10.0 % > 5 %")


def test_an_slo_short_of_its_attainment_breaks_a_level_with_no_errors(tmp_path):
    path = stepped_open_run(tmp_path, refuse_from=99)
    requests = pd.read_csv(path / schema.REQUESTS_CSV)
    slow = requests["ts"] >= T0 + 30  # from 16/s on: TTFT 400 ms
    requests.loc[slow, ["ttft_ms", "latency_ms"]] += 200
    requests.to_csv(path / schema.REQUESTS_CSV, index=False)
    broke = first_break(run_levels(load_run(path)))
    assert broke.level == 16 and "ttft_ms <= 300 (0.0 % met, needs 95 %)" in broke.why


def test_a_closed_model_breaks_at_running_agents_and_never_says_it_did_not_break(tmp_path):
    frames, users = [], []
    for step, agents in enumerate((4, 8, 12, 16)):
        ts = T0 + step * 10 + np.arange(0, 10, 10 / (agents * 5))
        ok = np.ones(ts.size, bool)
        ok[: int(ts.size * (0.0, 0.02, 0.2, 0.4)[step])] = False
        frames.append(streams(ts, ok, np.full(ts.size, 200.0)))
        users += [
            {"ts": T0 + step * 10 + s, "users": agents, "target_users": agents, "phase": "ramp"}
            for s in range(10)
        ]
    meta = {"profile": {"name": "breakpoint"}, "stop_reason": "profile complete", "exit_code": 1}
    run = load_run(write_run_dir(tmp_path, meta, requests=pd.concat(frames), users=pd.DataFrame(users)))
    verdict = headline(run).verdict
    assert (
        verdict.startswith("Yes: it broke at 12 agents: error rate 20.0 % > 5 %")
        and "did not break" not in verdict
    )


def test_it_did_not_break_only_when_no_level_broke_the_rule(tmp_path):
    run = load_run(stepped_open_run(tmp_path, refuse_from=99))
    assert headline(run).verdict.startswith("No: it did not break up to 18 arrivals/s")


def test_late_and_dropped_arrivals_with_shares_and_first_times(tmp_path):
    path = stepped_open_run(tmp_path, rates=(10,), refuse_from=99)
    requests = pd.read_csv(path / schema.REQUESTS_CSV)
    requests.loc[[5, 50], "start_lateness_ms"] = [150.0, 400.0]
    requests.to_csv(path / schema.REQUESTS_CSV, index=False)
    meta = json.loads((path / schema.RUN_JSON).read_text())
    meta["open_model"] |= {"issued_arrivals": 100, "dropped_arrivals": 25, "first_dropped_ts": T0 + 7.5}
    (path / schema.RUN_JSON).write_text(json.dumps(meta))
    found = arrivals(load_run(path))
    assert (found.started, found.late, found.dropped, found.due) == (98, 2, 25, 125)  # each arrival once
    assert found.first_late_s == pytest.approx(0.35, abs=0.01) and found.first_dropped_s == 7.5
    assert found.dropped_share == 0.2 and found.lateness["lateness_n"] == 100


def test_arrivals_issued_but_never_sent_are_dropped_with_a_note(tmp_path):
    """issued_arrivals 110 against 100 started: the 10 an agent took as the run stopped count as
    dropped, and the console says so; started + late + dropped = due."""
    path = stepped_open_run(tmp_path, rates=(10,), refuse_from=99)
    meta = json.loads((path / schema.RUN_JSON).read_text())
    meta["open_model"] |= {"issued_arrivals": 110, "dropped_arrivals": 5, "first_dropped_ts": T0 + 7.5}
    (path / schema.RUN_JSON).write_text(json.dumps(meta))
    found = arrivals(load_run(path))
    assert (found.started, found.late, found.dropped, found.unsent, found.due) == (100, 0, 15, 10, 115)
    assert found.started + found.late + found.dropped == found.due
    assert "(10 of them issued as the run stopped, never sent)" in arrivals_line(found)


def test_summary_json_carries_the_headline_figures_with_units_and_counts(tmp_path):
    path = stepped_open_run(tmp_path)
    write_report(path)
    doc = json.loads((path / schema.SUMMARY_JSON).read_text())
    assert (doc["exit_code"], doc["stop_reason"]) == (1, "profile complete")
    broke = doc["breaking_level"]
    assert (broke["value"], broke["unit"], broke["held_up_to"], broke["levels"]) == (
        16.0,
        "arrivals/s",
        14.0,
        5,
    )
    assert broke["why"].startswith("error rate 10.0 % > 5 %; SLO missed: ttft_ms <= 300 (90.0 % met")
    assert "error rate" in doc["breaking_level"]["rule"]
    assert (
        doc["goodput"]["slos"] == ["ttft_ms <= 300", "tpot_ms p90 <= 21"]
        and doc["goodput"]["requests"]["scored"] == 700
    )
    assert doc["latency"]["tpot"]["n"] == doc["latency"]["latency"]["n"] and doc["latency"]["unit"] == "ms"
    assert doc["arrivals"]["started"] == 700 and doc["capacity"] is None


def test_streams_of_tool_calls_only_have_their_tpot_withheld_with_the_reason(tmp_path):
    rows = streams(T0 + np.arange(20) * 0.1, np.ones(20, bool), np.full(20, 200.0))
    rows["content_tokens"], rows["content_span_ms"] = 0, np.nan  # tool-call fragments, no text
    run = load_run(write_run_dir(tmp_path, {"profile": {"name": "smoke"}}, requests=rows))
    figures = {f.label: f for f in headline(run).figures}
    assert figures["p95 TPOT"].value == TPOT_WITHHELD
    assert f"TPOT: {TPOT_WITHHELD}" in console_summary(run)
    (note,) = tpot_notes(run)
    assert "withheld from 20 of 20 streams that delivered at most one content token" in note


def test_a_run_recorded_before_content_tokens_says_tpot_was_not_measured(tmp_path):
    rows = streams(T0 + np.arange(20) * 0.1, np.ones(20, bool), np.full(20, 200.0))
    rows = rows.drop(columns=["content_tokens", "content_span_ms"])
    run = load_run(write_run_dir(tmp_path, {"profile": {"name": "smoke"}}, requests=rows))
    assert {f.label: f for f in headline(run).figures}["p95 TPOT"].value == TPOT_UNRECORDED
    assert "not measured for 20 streams that recorded no content_tokens" in tpot_notes(run)[0]
