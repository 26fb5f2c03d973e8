"""Append-only CSV files of the run directory, with the schema's header written once.

Used by the recorder (requests/tasks/agents) and by the capacity profile; it knows nothing of Locust.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

from contract.redact import redact


class CsvAppender:
    """One CSV file opened for appending; rows are dicts keyed by the given columns."""

    def __init__(self, path: Path, columns: Iterable[str]):
        self.path = Path(path)
        self.columns = tuple(columns)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        self._file = open(self.path, "a", newline="", encoding="utf-8")  # noqa: SIM115 (lives with the run)
        self._writer = csv.DictWriter(self._file, fieldnames=self.columns, extrasaction="ignore")
        if fresh:
            self._writer.writeheader()
            self._file.flush()
        self.rows_written = 0

    def write(self, row: Mapping) -> None:
        self._writer.writerow({k: _cell(v) for k, v in row.items()})
        self.rows_written += 1

    def flush(self) -> None:
        if not self._file.closed:
            self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


def _cell(value):
    """None and NaN become an empty cell: "not measured", never zero."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return redact(value) if isinstance(value, str) else value
