"""The leak verdict scored on the bank of memory series with known truth (tests/soak_bank.py): at the
shortest soak the kit allows and beyond, no false leak, no leak above the printed detectable slope
called "no evidence", >= 95 % right; and docs/analysis.md shows this very confusion table."""

from __future__ import annotations

import pytest

from tests.paths import REPO
from tests.soak_bank import JUDGED, confusion_table, score


@pytest.fixture(scope="module")
def scored():
    return score()


def test_the_bank_has_no_false_leak_and_no_missed_leak_at_any_length(scored):
    wrong = scored[scored["outcome"].isin(["false leak", "missed leak"])]
    assert wrong.empty, wrong.to_string()


def test_the_verdict_is_right_on_95_percent_of_the_bank_at_the_shortest_soak_and_beyond(scored):
    judged = scored[scored["length"].isin(JUDGED)]
    for length, rows in judged.groupby("length"):
        assert (rows["outcome"] == "right").mean() >= 0.95, (length, rows[rows["outcome"] != "right"])


def test_the_docs_show_the_bank_s_own_confusion_table(scored):
    assert confusion_table(scored) in (REPO / "docs" / "analysis.md").read_text()
