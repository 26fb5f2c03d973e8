"""Appends sample rows to samples.csv, one flush per row and whole lines only (contract/csv_append.py), so
a crash or a full disk loses no written row and leaves no half row.

Refuses (one-line OutputError) a file whose header is not the schema's; never rewrites existing rows.
"""

from __future__ import annotations

import csv
from pathlib import Path

from contract.csv_append import CsvAppender, RunFileError
from contract.schema import SAMPLE_COLUMNS


class OutputError(Exception):
    """The output file cannot be used (bad input: exit 2)."""


class SampleWriter:
    def __init__(self, path: str) -> None:
        target = Path(path)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            fresh = not target.exists() or target.stat().st_size == 0
            if not fresh:
                _check_header(target)
            self._out = CsvAppender(target, SAMPLE_COLUMNS)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        except RunFileError as exc:
            raise OutputError(str(exc)) from None

    def write(self, row: dict[str, str]) -> None:
        """One row, on disk whole before returning; RunFileError when it cannot be written."""
        self._out.write(row)
        self._out.flush()

    def close(self) -> None:
        try:
            self._out.close()
        except RunFileError:
            pass  # the failed row was reported when it was written; the rows before it are whole


def _check_header(path: Path) -> None:
    with open(path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f), [])
    if tuple(header) != SAMPLE_COLUMNS:
        raise OutputError(f"{path} exists with another header; refusing to append (choose another --out)")
