"""docs/run-directory.md lists every column of contract/schema.py under its file: the user's reference
cannot fall behind the contract."""

from __future__ import annotations

import re

import pytest

from contract import schema
from tests.locust_runs import REPO

DOC = REPO / "docs" / "run-directory.md"
FILES = {**schema.FILES_COLUMNS, schema.CAPACITY_CSV: schema.CAPACITY_COLUMNS}


def documented(file_name: str) -> set[str]:
    """The words of the doc's bullet for `file_name` (from "- `file`:" to the next bullet or blank line)."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"^- `{re.escape(file_name)}`:(.*?)(?=^- |^\s*$)", text, re.M | re.S)
    assert found, f"{DOC.name} has no '- `{file_name}`:' bullet"
    return set(re.findall(r"[a-z_0-9]+", found.group(1)))


@pytest.mark.parametrize("file_name", sorted(FILES))
def test_the_run_directory_doc_lists_every_column(file_name):
    missing = [c for c in FILES[file_name] if c not in documented(file_name)]
    assert missing == [], f"{DOC.name} misses {file_name} columns {missing}"


def test_a_missing_column_would_be_caught():
    assert "no_such_column" not in documented(schema.USERS_CSV)
