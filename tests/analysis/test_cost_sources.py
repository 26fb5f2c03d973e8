"""Where each $ figure comes from: calls without a list price count at the gateway-reported cost, the
headline line says which figure came from where (and the difference when both exist), and the report's
notes never deny a gateway cost its tables show.

Truth: hand-set rows (tokens, models, gateway costs) and the kit's price table (sim-model, fictional).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from analysis.cost import cost_section, describe_total, dollar_total, price_rows, usage_rows
from analysis.headline import headline
from analysis.model import RunData
from analysis.prices import load_prices
from analysis.summary import console_summary
from analysis.summary_json import summary
from contract import schema

SIM = load_prices()  # sim-model: input 1, output 2 ($/M, fictional); "alias" is not in it


def run_of(rows: list[dict]) -> RunData:
    frame = pd.DataFrame([{"ts": 1.0, "agent_id": "a", "operation": "chat", "ok": 1, **r} for r in rows])
    frame = frame.reindex(columns=schema.REQUEST_COLUMNS)
    return RunData(path=Path("x"), meta={}, requests=frame)


def total_of(rows: list[dict]):
    return dollar_total(price_rows(usage_rows(run_of(rows))[0], SIM)[0])


ALIAS = [
    {"tokens_in": 100, "tokens_out": 10, "model": "alias", "gateway_cost_usd": c} for c in (0.001, 0.0025)
]


def test_no_list_price_counts_the_gateways_cost_and_says_so():
    total = total_of(ALIAS)
    assert total.basis == "gateway" and total.usd == pytest.approx(0.0035)
    line = describe_total(total)
    assert line.startswith("LLM cost: $0.003500 over 2 calls") and "as the gateway reported" in line, line
    assert "$0.003500" in console_summary(run_of(ALIAS))


def test_as_billed_is_the_gateways_own_cost_with_the_price_tables_figure_beside_it():
    listed = 1000 * 1e-6 + 100 * 2e-6  # sim-model at the table's rates
    rows = [{"tokens_in": 1000, "tokens_out": 100, "model": "sim-model", "gateway_cost_usd": listed * 1.1}]
    total = total_of(rows)
    assert total.basis == "gateway" and total.usd == pytest.approx(listed * 1.1)
    assert total.table_usd == pytest.approx(listed)
    assert total.diff_pct == pytest.approx(-100 / 11)  # the table is 9.1 % under the gateway's bill
    line = describe_total(total)
    assert line.startswith("LLM cost: $0.001320 over 1 calls, every call as the gateway reported it"), line
    assert "the price table's rates give $0.001200" in line and "-9.1 %" in line, line
    figures = {f.label: f for f in headline(run_of(rows)).figures}
    billed = figures["LLM cost as billed"]
    assert billed.value == pytest.approx(listed * 1.1) and billed.note == "the gateway's own cost"
    beside = figures["LLM cost at the price table's rates"]
    assert beside.value == pytest.approx(listed) and "FICTIONAL" in beside.text()
    assert "FICTIONAL price table entry: sim-model" in figures["LLM cost at list price"].text()
    doc = summary(run_of(rows))["cost"]
    assert (doc["as_billed"], doc["basis"], doc["fictional_prices"]) == (
        listed * 1.1,
        "gateway",
        ["sim-model"],
    )
    assert doc["price_table"]["usd"] == pytest.approx(listed)
    console = console_summary(run_of(rows))
    assert "LLM cost: $0.001320" in console and "FICTIONAL entries: sim-model" in console, console


def test_mixed_calls_are_summed_and_split_by_source():
    rows = [*ALIAS, {"tokens_in": 1000, "tokens_out": 100, "model": "sim-model"}]
    total = total_of(rows)
    assert total.basis == "gateway and price table" and total.usd == pytest.approx(0.0035 + 0.0012)
    assert (total.gateway_calls, total.table_only_calls) == (2, 1)


def test_neither_figure_is_na_never_zero():
    total = total_of([*ALIAS, {"tokens_in": 5, "tokens_out": 5, "model": "alias"}])
    assert pd.isna(total.usd) and describe_total(total).startswith("LLM cost: n/a over 3 calls")


def test_report_notes_state_the_gateways_cost_its_table_shows():
    section = cost_section(run_of(ALIAS), SIM)
    ledger = dict(section.tables)["LLM cost by model (USD)"]
    assert ledger.loc["total", "usd_gateway"] == pytest.approx(0.0035)
    assert not any("reported no cost" in note for note in section.notes), section.notes
    assert any("$0.003500" in note and "gateway" in note for note in section.notes), section.notes
