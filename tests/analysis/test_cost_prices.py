"""Price table: the shipped file, model matching, and one clear line for each kind of bad file."""

from __future__ import annotations

import pytest

from analysis.prices import DEFAULT_PRICES_PATH, PriceTableError, load_prices, parse_prices

GOOD_ENTRY = """
[models."m-1"]
input = 1.0
cached_input = 0.1
cache_write = 1.25
output = 2.0
currency = "USD"
as_of = 2026-08-01
source = "test"
"""


def test_shipped_table_carries_seed_004_deepseek_figures_dated():
    price = load_prices().lookup("deepseek-v4-flash")
    assert (price.input, price.output, price.cached_input) == (0.14, 0.28, 0.014)
    assert price.as_of == "2026-08" and price.currency == "USD" and "the rounds study" in price.source


def test_shipped_simulator_model_is_marked_fictional_and_real_ones_are_not():
    table = load_prices(DEFAULT_PRICES_PATH)
    assert table.lookup("sim-model").fictional and "FICTIONAL" in table.lookup("sim-model").source
    assert not any(p.fictional for name, p in table.prices.items() if name != "sim-model")


@pytest.mark.parametrize(
    "reported",
    [
        "deepseek-v4-flash",
        "DeepSeek-V4-Flash",
        "deepseek/deepseek-v4-flash",
        "openrouter/deepseek/deepseek-v4-flash",
    ],
)
def test_lookup_normalises_case_and_provider_prefix(reported):
    assert load_prices().lookup(reported).model == "deepseek-v4-flash"


def test_lookup_drops_dated_snapshot_suffixes():
    table = load_prices()
    assert table.lookup("gpt-4o-mini-2024-07-18").model == "gpt-4o-mini"
    assert table.lookup("claude-sonnet-4-20250514").model == "claude-sonnet-4"


@pytest.mark.parametrize("unknown", ["gpt-4o", "deepseek-v4", "deepseek-v4-flash-pro", "sim", None, ""])
def test_lookup_never_guesses_a_near_name(unknown):
    assert load_prices().lookup(unknown) is None


def test_valid_text_parses_with_toml_date():
    price = parse_prices(GOOD_ENTRY).lookup("m-1")
    assert (price.input, price.cache_write, price.as_of) == (1.0, 1.25, "2026-08-01")


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (("input = 1.0", "input = -0.5"), "models.m-1.input: price must be zero or more"),
        (("output = 2.0", 'output = "cheap"'), "models.m-1.output: price must be a number"),
        (("cache_write = 1.25\n", ""), "models.m-1: missing field 'cache_write'"),
        (('source = "test"', 'source = "test"\nouput = 3'), "models.m-1: unknown field 'ouput'"),
        (("as_of = 2026-08-01", 'as_of = "last week"'), "models.m-1.as_of: must be a date"),
        (("output = 2.0", "output = 2.0 2"), "not valid TOML"),
        (('[models."m-1"]', '[model."m-1"]'), "no [models"),
    ],
)
def test_bad_price_file_gives_one_clear_line(tmp_path, edit, expected):
    path = tmp_path / "prices.toml"
    path.write_text(GOOD_ENTRY.replace(*edit))
    with pytest.raises(PriceTableError) as caught:
        load_prices(path)
    message = str(caught.value)
    assert expected in message and str(path) in message
    assert "\n" not in message


def test_absent_price_file_gives_one_clear_line(tmp_path):
    with pytest.raises(PriceTableError, match=r"cannot read price table") as caught:
        load_prices(tmp_path / "nope.toml")
    assert "\n" not in str(caught.value)
