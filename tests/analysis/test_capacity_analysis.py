"""Capacity math on synthetic capacity.csv frames whose truth is known exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis import capacity as cap
from analysis import churn as churn_study
from contract import schema
from contract.schema import CAPACITY_COLUMNS, GIB, MIB


def synthetic_run(base=30.0, first=100.0, per=4.0, budget=GIB, cap_n=None, fail_at=None, noise=0.0, seed=0):
    """Rows as agents/capacity/drivers.py writes them, from a linear memory model with optional noise."""
    rng = np.random.default_rng(seed)
    rows = [
        dict(ts=0.0, n=0, closed=0, event="baseline", rss_bytes=base * MIB, budget_bytes=budget, metric="rss")
    ]
    n, reason = 0, schema.STOP_CAP
    while True:
        n += 1
        if fail_at == n:
            rows.append(dict(ts=n, n=n, event="failed", rss_bytes=rows[-1]["rss_bytes"], detail="HTTP 500"))
            reason = schema.STOP_FAILURE
            break
        mib = base + first + per * n + rng.normal(0, noise)
        rows.append(
            dict(
                ts=n,
                n=n,
                closed=0,
                event="ready",
                session_id=f"s{n}",
                ready_ms=40.0 + n % 10,
                rss_bytes=mib * MIB,
                budget_bytes=budget,
                metric="rss",
            )
        )
        if mib * MIB >= budget:
            reason = schema.STOP_BUDGET
            break
        if cap_n and n >= cap_n:
            break
    rows.append(dict(ts=n + 1, n=n, event="stop", detail=reason))
    return pd.DataFrame(rows, columns=list(CAPACITY_COLUMNS))


def test_capacity_reads_back_slope_first_agent_and_n_max_exactly():
    result = cap.capacity_result(synthetic_run())
    # 30 + 100 + 4N >= 1024 first at N = 223.5 -> 224
    assert result.n_stop == 224 and result.n_max == 223
    assert result.marginal_mib == pytest.approx(4.0)
    assert result.r2 == pytest.approx(1.0)
    assert result.first_agent_mib == pytest.approx(104.0)
    assert result.baseline_mib == pytest.approx(30.0)
    assert result.mib_at_n == pytest.approx(30 + 100 + 800)
    assert result.headroom_mib == pytest.approx(1024 - (130 + 4 * 223))
    assert result.startup["n"] == 224 and result.duplicate_session_ids == 0


def test_capacity_unstable_fit_publishes_no_capacity():
    result = cap.capacity_result(synthetic_run(per=1.0, noise=8.0, first=890, seed=3))
    assert not result.stable
    assert result.n_max is None
    assert any("not stable" in note for note in result.notes)


def test_capacity_failure_publishes_no_capacity():
    result = cap.capacity_result(synthetic_run(fail_at=7))
    assert result.failures == 1 and result.stop_reason == schema.STOP_FAILURE
    assert result.n_max is None and result.agents_ready == 6


def test_capacity_cap_reports_projection_not_capacity():
    result = cap.capacity_result(synthetic_run(cap_n=50))
    assert result.n_max is None and result.stop_reason == schema.STOP_CAP
    proj = cap.projection_table(result.fit)
    # 130 + 4N = 2048 -> N = 479.5
    assert proj.loc[2.0, "projected_agents"] == 479
    assert proj.loc[2.0, "low"] <= 479 <= proj.loc[2.0, "high"]


def test_capacity_run_without_stop_row_is_interrupted():
    frame = synthetic_run()
    result = cap.capacity_result(frame[frame["event"] != "stop"])
    assert result.stop_reason == cap.STOP_INTERRUPTED and result.n_max is None


def test_capacity_duplicate_session_ids_are_counted():
    frame = synthetic_run()
    frame.loc[frame["n"] == 5, "session_id"] = "s4"
    assert cap.capacity_result(frame).duplicate_session_ids == 1


def test_capacity_campaign_table_has_median_and_range():
    runs = {f"run {i}": cap.capacity_result(synthetic_run(per=p)) for i, p in enumerate((3.9, 4.0, 4.5), 1)}
    table = cap.run_table(runs)
    assert table.loc["marginal RSS (MiB/agent)", "median"] == pytest.approx(4.0)
    assert table.loc["N_max", "range"] == f"{runs['run 3'].n_max}–{runs['run 1'].n_max}"
    assert table.loc["stop reason", "median"] == schema.STOP_BUDGET


def test_capacity_before_after_table_shows_ratio():
    before = cap.run_table({f"b{i}": cap.capacity_result(synthetic_run(per=40.0 + i)) for i in range(3)})
    after = cap.run_table({f"a{i}": cap.capacity_result(synthetic_run(per=4.0 + i / 10)) for i in range(3)})
    table = cap.before_after_table(before, after)
    assert table.loc["marginal RSS (MiB/agent)", "after / before"] == pytest.approx(4.1 / 41.0)
    assert table.loc["N_max", "before"].startswith("21 (")


def churn_frame(retain=2.0, per=4.0, batch=5, cycles=8, base=50.0, noise=0.0, seed=1):
    rng = np.random.default_rng(seed)
    rows = [dict(n=0, closed=0, event="baseline", rss_bytes=base * MIB, metric="rss")]
    closed = 0
    for _ in range(cycles):
        kept = base + 100 + retain * closed
        rows.append(dict(n=batch, closed=closed, event="opened", rss_bytes=(kept + per * batch) * MIB))
        closed += batch
        mib = base + 100 + retain * closed + rng.normal(0, noise)
        rows.append(dict(n=0, closed=closed, event="closed", rss_bytes=mib * MIB))
    rows.append(dict(event="stop", detail=schema.STOP_CHURN_DONE))
    return pd.DataFrame(rows, columns=list(CAPACITY_COLUMNS))


def test_churn_reads_back_retained_mib_per_closed_session():
    result = churn_study.churn_result(churn_frame(retain=2.0))
    assert result.retained_mib_per_session == pytest.approx(2.0)
    assert result.returned_mib_per_session == pytest.approx(4.0 - 2.0)
    assert result.grown_mib_per_session == pytest.approx(4.0)
    assert result.verdict.startswith("retains")


def test_churn_without_retention_says_so():
    result = churn_study.churn_result(churn_frame(retain=0.0, noise=0.05))
    assert result.verdict.startswith("no retention")


def test_capacity_section_reports_table_projection_and_which_metric(tmp_path):
    from analysis.model import RunData

    run = RunData(
        path=tmp_path, meta={"profile": {"params": {"capacity_at_n": 100}}}, capacity=synthetic_run(cap_n=300)
    )
    section = cap.capacity_section(run)
    captions = [caption for caption, _ in section.tables]
    assert any("Projection" in c and "not measured" in c for c in captions)
    table = section.tables[0][1]
    assert table.loc["at N=100 (MiB)"].iloc[0] == pytest.approx(530.0)
    assert any("RSS" in note for note in section.notes)


def test_capacity_section_of_a_churn_run_is_the_churn_section(tmp_path):
    from analysis.model import RunData

    section = cap.capacity_section(RunData(path=tmp_path, meta={}, capacity=churn_frame()))
    assert section.title.startswith("Churn")


def test_an_inconclusive_churn_shows_the_mib_kept_each_cycle_and_what_would_settle_it(tmp_path):
    """Allocator retention growing 0 -> 4 -> 12 -> 60 MiB over four cycles said "inconclusive"
    from three points, with neither the MiB kept nor a hint to run more cycles."""
    from analysis.model import RunData
    from analysis.summary import console_summary

    kept = [0.0, 4.0, 12.0, 60.0]
    rows = [dict(n=0, closed=0, event="baseline", rss_bytes=150 * MIB, metric="rss")]
    for cycle, mib in enumerate(kept, 1):
        rows.append(dict(n=5, closed=5 * (cycle - 1), event="opened", rss_bytes=(170 + mib) * MIB))
        rows.append(dict(n=0, closed=5 * cycle, event="closed", rss_bytes=(150 + mib) * MIB))
    frame = pd.DataFrame(rows, columns=list(CAPACITY_COLUMNS))
    result = churn_study.churn_result(frame)
    assert result.verdict.startswith("inconclusive") and result.kept_mib == pytest.approx(kept)
    assert "--churn-cycles 10" in result.suggestion and "--churn-batch 10" in result.suggestion
    section = cap.capacity_section(RunData(path=tmp_path, meta={}, capacity=frame))
    table = section.tables[0][1]
    assert table.loc["kept above the baseline after each cycle", "value"] == "0.0 -> 4.0 -> 12.0 -> 60.0 MiB"
    assert any("--churn-cycles 10" in note for note in section.notes)
    summary = console_summary(RunData(path=tmp_path, meta={"profile": {"name": "churn"}}, capacity=frame))
    assert "kept above the baseline after each cycle: 0.0 -> 4.0 -> 12.0 -> 60.0 MiB" in summary
    assert "run more cycles (--churn-cycles 10)" in summary
    assert churn_study.churn_result(churn_frame(retain=2.0)).suggestion is None  # a verdict needs no hint


def test_the_console_peak_of_a_churn_run_is_its_highest_reading_not_its_baseline(tmp_path):
    """A churn run's console printed its baseline (38.8 MiB) as the peak target RSS (158.9 MiB read)."""
    from analysis.model import RunData
    from analysis.summary import console_summary

    frame = churn_frame(retain=1.0, per=4.0, batch=5, cycles=3, base=50.0)
    text = console_summary(RunData(path=tmp_path, meta={}, capacity=frame))
    highest = frame["rss_bytes"].max() / MIB
    assert f"peak target RSS: {highest:,.1f} MiB" in text
