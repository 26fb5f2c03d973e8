"""Cost tables: seed 004's ledger from its own figures, cache pricing, n/a (not zero) for what has no
price, gateway-reported vs computed, and the host's share per agent-hour and per task."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis.cost import (
    cost_by_model,
    cost_section,
    infra_cost,
    per_task_summary,
    price_rows,
    task_costs,
    tasks_per_hour,
    usage_rows,
)
from analysis.load import load_run
from analysis.model import RunData
from analysis.prices import PriceTableError, load_prices, parse_prices
from contract import schema

SEED_004_PRICES = parse_prices(
    """
[models."deepseek-v4-flash"]
input = 0.14
cached_input = 0.014
cache_write = 0.14
output = 0.28
currency = "USD"
as_of = "2026-08"
source = "the rounds study"
""",
    origin="seed-004.toml",
)
SIM = load_prices()  # sim-model: input 1, cached 0.1, cache write 1.25, output 2 ($/M, fictional)


def requests_frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows).reindex(
        columns=[
            "ts",
            "agent_id",
            "operation",
            "ok",
            "tokens_in",
            "tokens_cached",
            "tokens_cache_write",
            "tokens_out",
            "tokens_reasoning",
            "model",
            "gateway_cost_usd",
            "task_id",
        ]
    )


def seed_004_run() -> RunData:
    """48 calls, 2 per task, 24 tasks: 10.8 M input and 21 K output tokens in all, as in the seed."""
    rows = [
        {
            "agent_id": f"a{i % 8}",
            "tokens_in": 225_000,
            "tokens_out": 437 + (i < 24),
            "model": "deepseek-v4-flash",
            "task_id": f"t{i // 2}",
        }
        for i in range(48)
    ]
    return RunData(path=Path("seed-004"), meta={}, requests=requests_frame(rows))


def test_seed_004_ledger_is_151_at_list_and_about_016_if_every_input_token_hit_the_cache():
    rows, _ = usage_rows(seed_004_run())
    priced, warnings = price_rows(rows, SEED_004_PRICES)
    total = cost_by_model(priced).loc["total"]
    assert (total["calls"], total["tokens_in"], total["tokens_out"]) == (48, 10_800_000, 21_000)
    assert total["usd_list"] == pytest.approx(1.51, abs=0.01)  # 1.512 input + 0.006 output
    assert total["usd_floor"] == pytest.approx(0.16, abs=0.005)  # 0.1512 + 0.006
    assert total["usd_billed"] == pytest.approx(total["usd_list"])  # no cache reads reported: full price
    assert warnings == []


def test_seed_004_per_task_cost_and_per_1000_tasks():
    summary = per_task_summary(task_costs(seed_004_run(), SEED_004_PRICES)).loc["list price"]
    assert summary["tasks"] == 24 and summary["unpriced_tasks"] == 0
    assert summary["usd_mean"] == pytest.approx(1.51788 / 24, rel=1e-4)
    assert summary["usd_per_1000_tasks"] == pytest.approx(1.51788 / 24 * 1000, rel=1e-4)
    assert "p95 needs ~200" in summary["small_sample"]


def test_shipped_table_prices_seed_004_the_same_as_its_own_figures():
    rows, _ = usage_rows(seed_004_run())
    shipped = cost_by_model(price_rows(rows, load_prices())[0]).loc["total", "usd_list"]
    assert shipped == pytest.approx(1.51788, rel=1e-6)


def test_billed_prices_cache_reads_and_writes_list_ignores_them():
    rows = [
        {
            "tokens_in": 1000,
            "tokens_cached": 800,
            "tokens_cache_write": 100,
            "tokens_out": 50,
            "model": "sim-model",
        }
    ]
    run = RunData(path=Path("x"), meta={}, requests=requests_frame(rows))
    priced, _ = price_rows(usage_rows(run)[0], SIM)
    row = priced.iloc[0]
    assert row["usd_list"] == pytest.approx((1000 * 1 + 50 * 2) / 1e6)
    assert row["usd_billed"] == pytest.approx((100 * 1 + 800 * 0.1 + 100 * 1.25 + 50 * 2) / 1e6)
    assert row["usd_floor"] == pytest.approx((1000 * 0.1 + 50 * 2) / 1e6)


def test_unknown_model_gives_one_warning_and_na_dollars_not_zero():
    rows = [
        {"tokens_in": 500, "tokens_out": 5, "model": "mystery-model"},
        {"tokens_in": 500, "tokens_out": 5, "model": "sim-model"},
    ]
    run = RunData(path=Path("x"), meta={}, requests=requests_frame(rows))
    rows_, _ = usage_rows(run)
    priced, warnings = price_rows(rows_, SIM)
    table = cost_by_model(priced)
    assert warnings == [f"warning: model 'mystery-model' is not in price table {SIM.origin}: its cost is n/a"]
    assert table.loc["mystery-model", ["usd_list", "usd_billed", "usd_floor"]].isna().all()
    assert table.loc["total", "tokens_in"] == 1000
    assert math.isnan(table.loc["total", "usd_list"])  # a partial total would understate the bill
    assert table.loc["sim-model", "usd_list"] == pytest.approx(510 / 1e6)


def test_cost_section_with_a_bad_price_file_shows_na_and_the_error_line(tmp_path):
    bad = tmp_path / "prices.toml"
    bad.write_text('[models."sim-model"]\ninput = -1\n')
    with pytest.raises(PriceTableError) as caught:
        load_prices(bad)
    section = cost_section(seed_004_run(), caught.value)
    ledger = dict(section.tables)["LLM cost by model (USD)"]
    assert ledger["usd_list"].isna().all() and ledger.loc["total", "tokens_in"] == 10_800_000
    assert any(str(caught.value) in note for note in section.notes)


def test_gateway_reported_cost_is_compared_in_percent():
    rows = [
        {"tokens_in": 1000, "tokens_out": 100, "model": "sim-model", "gateway_cost_usd": 0.0012 * 1.1}
        for _ in range(3)
    ]
    run = RunData(path=Path("x"), meta={}, requests=requests_frame(rows))
    section = cost_section(run, SIM)
    comparison = dict(section.tables)["Computed vs gateway-reported cost"].loc["sim-model"]
    assert comparison["calls"] == 3
    assert comparison["usd_computed"] == pytest.approx(3 * 0.0012)
    assert comparison["diff_pct"] == pytest.approx((1 / 1.1 - 1) * 100)  # -9.09 %


def test_task_board_usage_comes_from_tasks_when_requests_carry_none():
    tasks = pd.DataFrame(
        {
            "task_id": ["t1", "t2"],
            "agent_id": ["a1", "a2"],
            "status": ["done", "done"],
            "submitted_ts": [0.0, 10.0],
            "finished_ts": [100.0, 120.0],
            "llm_calls": [2, 3],
            "tokens_in": [1000, 3000],
            "tokens_cached": [0, 1000],
            "tokens_out": [10, 30],
            "model": ["sim-model"] * 2,
            "gateway_cost_usd": [None, None],
        }
    )
    polls = requests_frame([{"agent_id": "a1", "operation": "task.poll", "task_id": "t1"}])
    run = RunData(path=Path("x"), meta={}, requests=polls, tasks=tasks)
    rows, source = usage_rows(run)
    ledger = cost_by_model(price_rows(rows, SIM)[0])
    assert source == "tasks.csv"
    assert ledger.loc["total", "calls"] == 5 and ledger.loc["total", "tokens_in"] == 4000
    per_task = task_costs(run, SIM)
    assert per_task.loc["t2", "usd_billed"] == pytest.approx((2000 * 1 + 1000 * 0.1 + 30 * 2) / 1e6)


def test_infra_cost_per_agent_hour_and_host_share_per_task():
    table = infra_cost(host_price_month=20.0, agents=10, tasks_hour=24.0, llm_usd_per_task=0.0632)
    assert table.loc["host per agent-hour", "value"] == pytest.approx(20 / 730 / 10)
    assert table.loc["host share per task", "value"] == pytest.approx(20 / 730 / 24)
    assert table.loc["total per task", "value"] == pytest.approx(20 / 730 / 24 + 0.0632)
    unknown = infra_cost(20.0, agents=None, tasks_hour=None, llm_usd_per_task=None)
    assert unknown.loc[["host per agent-hour", "host share per task", "total per task"], "value"].isna().all()


def test_task_throughput_counts_done_tasks_over_the_run():
    tasks = pd.DataFrame(
        {
            "task_id": ["a", "b", "c"],
            "status": ["done", "done", "failed"],
            "submitted_ts": [0.0, 0.0, 0.0],
            "finished_ts": [10.0, 20.0, 30.0],
        }
    )
    run = RunData(path=Path("x"), meta={"start_ts": 0.0, "end_ts": 1800.0}, tasks=tasks)
    assert tasks_per_hour(run) == pytest.approx(4.0)


def test_cost_section_names_price_table_and_dates_and_is_none_without_usage():
    section = cost_section(seed_004_run(), load_prices(), host_price_month=20.0, capacity_agents=10)
    notes = " ".join(section.notes)
    assert str(load_prices().origin) in notes and "deepseek-v4-flash as of 2026-08" in notes
    assert set(dict(section.tables)) >= {"LLM cost by model (USD)", "LLM cost per task (USD)", "Infra cost"}
    assert dict(section.tables)["Infra cost"].loc["agents", "value"] == 10
    assert cost_section(RunData(path=Path("x"), meta={}), load_prices()) is None


def test_cost_section_reads_a_run_directory_with_empty_cells_as_missing(tmp_path):
    rows = [
        {
            "ts": 1.0,
            "agent_id": "a1",
            "operation": "chat.stream",
            "ok": 1,
            "tokens_in": 1000,
            "tokens_cached": 200,
            "tokens_out": 100,
            "model": "sim-model",
            "task_id": "t1",
        },
        {
            "ts": 2.0,
            "agent_id": "a1",
            "operation": "chat.stream",
            "ok": 1,
            "model": "sim-model",
            "task_id": "t1",
        },
        {"ts": 3.0, "agent_id": "a2", "operation": "session.create", "ok": 1},
    ]
    pd.DataFrame(rows).reindex(columns=schema.REQUEST_COLUMNS).to_csv(
        tmp_path / schema.REQUESTS_CSV, index=False
    )
    section = cost_section(load_run(tmp_path), SIM)
    ledger = dict(section.tables)["LLM cost by model (USD)"]
    assert ledger.loc["sim-model", "calls"] == 1 and pd.isna(ledger.loc["sim-model", "tokens_cache_write"])
    assert ledger.loc["sim-model", "usd_billed"] == pytest.approx((800 * 1 + 200 * 0.1 + 100 * 2) / 1e6)
    assert any("1 calls named a model but reported no usage" in note for note in section.notes)


def test_task_throughput_of_chat_agents_counts_task_ids_of_successful_requests():
    calls = requests_frame(
        [
            {"ts": 0.0, "ok": 1, "task_id": "t1"},
            {"ts": 60.0, "ok": 1, "task_id": "t1"},
            {"ts": 120.0, "ok": 1, "task_id": "t2"},
            {"ts": 150.0, "ok": 0, "task_id": "t3"},
        ]
    )
    run = RunData(path=Path("x"), meta={"start_ts": 0.0, "end_ts": 360.0}, requests=calls)
    assert tasks_per_hour(run) == pytest.approx(2 / 0.1)
