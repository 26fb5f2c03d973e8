"""The report's Sessions section read back from a replay of a known recording against the simulator: the
simulator's token count is the recording's, so tokens in read back at ratio 1 (±2 %), every copy replays
the recorded steps, and the recording's own model time and dollars stand beside the replay's."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.load import load_run
from analysis.prices import PriceTableError
from analysis.sessions import MAX_STEP_ROWS, TITLE, per_step_table, priced, sessions_section
from tests.capture.test_capture_recorder import TOOL_STEPS
from tests.capture.test_capture_replay import THINK_MS, recorded_session, replay, smoke

pytestmark = pytest.mark.e2e
SIM_PRICE = {"input": 1.00, "output": 2.00}  # prices.toml's sim-model, $ per million tokens


def test_the_sessions_section_reads_back_the_recordings_sizes_steps_and_its_own_figures(tmp_path):
    recorded = recorded_session(tmp_path)
    steps = [json.loads(line) for line in recorded.read_text().splitlines()[1:]]
    run_dir, _ = replay(tmp_path, "report", recorded, smoke(2, "4s"), "--identical-copies")
    run = load_run(run_dir)
    section = sessions_section(run)
    assert section is not None and section.title == TITLE
    tables = dict(section.tables)
    fidelity, per_session = tables["replay fidelity"], tables["per recorded session, beside the recording"]
    requests = run.requests
    assert requests is not None and set(requests["model"].dropna()) == {"sim-model"}

    tokens = fidelity.loc["tokens in / recorded"]
    assert tokens["n"] == requests["asked_tokens_in"].notna().sum() >= 2 * (TOOL_STEPS + 1)
    assert 0.98 <= tokens["p50"] <= 1.02 and 0.98 <= tokens["p95"] <= 1.02, fidelity
    late = fidelity.loc["start lateness (ms)"]
    assert late["n"] == (requests["step"] > 1).sum() and 0 <= late["p50"] <= 20, fidelity
    assert fidelity.loc["steps replayed / recorded", "p50"] == 1.0

    (name, row), *others = per_session.iterrows()
    assert not others and name == steps[0]["session"] and row["done"] >= 2
    assert row["steps recorded"] == row["steps replayed p50"] == TOOL_STEPS + 1
    recorded_ms = sum(s["response"]["latency_ms"] for s in steps)
    assert row["model time ms recorded"] == pytest.approx(recorded_ms, rel=1e-6)
    usage = [s["response"]["usage"] for s in steps]
    dollars = sum(
        u["prompt_tokens"] * SIM_PRICE["input"] + u["completion_tokens"] * SIM_PRICE["output"] for u in usage
    )
    assert row["$ recorded (list)"] == pytest.approx(dollars / 1e6, rel=1e-9)
    assert row["$ p50 (list)"] == pytest.approx(dollars / 1e6, rel=0.02)  # the same sizes, the same bill
    per_step = tables["per recorded session and step, beside the recording"]
    assert list(per_step.index) == [(name, k) for k in range(1, TOOL_STEPS + 2)]
    for (_, k), at in per_step.iterrows():
        answer = steps[k - 1]["response"]
        assert at["latency ms recorded"] == pytest.approx(answer["latency_ms"], rel=1e-6)
        used = answer["usage"]
        sized = used["prompt_tokens"] * SIM_PRICE["input"] + used["completion_tokens"] * SIM_PRICE["output"]
        assert at["$ recorded (list)"] == pytest.approx(sized / 1e6, rel=1e-9)
        assert at["$ p50 (list)"] == pytest.approx(sized / 1e6, rel=0.02)
        assert at["calls"] == (requests["step"] == k).sum() and at["TTFT ms p50"] > 0
    assert (run_dir / "report.md").read_text().count(f"## {TITLE}") == 1
    assert not any("no recorded" in note for note in section.notes), section.notes
    assert THINK_MS > late["p95"]  # late by the host's delay, never by a think time


def test_a_run_that_replayed_nothing_has_no_sessions_section(tmp_path):
    run = load_run(tmp_path)
    assert sessions_section(run) is None
    frame = pd.DataFrame({"task_id": ["t"], "recorded_session": [None]})
    run.tasks, run.requests = frame, pd.DataFrame({"task_id": ["t"]})
    assert sessions_section(run) is None


def test_a_file_of_many_sessions_is_tabled_per_step_across_them():
    sessions, steps = 30, 2  # 60 (session, step) rows: past MAX_STEP_ROWS
    tasks = pd.DataFrame({"task_id": [f"t{i}" for i in range(sessions)], "recorded_session": range(sessions)})
    requests = pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(sessions) for _ in range(steps)],
            "step": [k for _ in range(sessions) for k in range(1, steps + 1)],
            "latency_ms": 10.0,
            "recorded_latency_ms": [5.0, 7.0] * sessions,
            "ttft_ms": 1.0,
            "model": "sim-model",
            **{c: 1.0 for c in ("tokens_in", "tokens_out", "asked_tokens_in", "recorded_tokens_out")},
            **{c: float("nan") for c in ("tokens_cached", "tokens_cache_write", "gateway_cost_usd")},
        }
    )
    table, grain = per_step_table(tasks, priced(requests, PriceTableError("no table")))
    assert sessions * steps > MAX_STEP_ROWS and grain == "per step, across the recorded sessions"
    assert list(table.index) == [1, 2] and list(table["calls"]) == [sessions, sessions]
    assert list(table["latency ms recorded"]) == [5.0, 7.0] and table["$ p50 (list)"].isna().all()
