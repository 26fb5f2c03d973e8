"""Appends sample rows to samples.csv, one flush per row, so a crash of the sampler loses no written row.

Refuses (one-line OutputError) a file whose header is not the schema's; never rewrites existing rows.
"""

from __future__ import annotations

import csv
from pathlib import Path

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
            self._file = open(target, "a", newline="", encoding="utf-8")  # noqa: SIM115 (kept open)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        self._csv = csv.DictWriter(self._file, fieldnames=SAMPLE_COLUMNS)
        if fresh:
            self._csv.writeheader()
            self._file.flush()

    def write(self, row: dict[str, str]) -> None:
        self._csv.writerow(row)
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _check_header(path: Path) -> None:
    with open(path, newline="", encoding="utf-8") as f:
        header = next(csv.reader(f), [])
    if tuple(header) != SAMPLE_COLUMNS:
        raise OutputError(f"{path} exists with another header; refusing to append (choose another --out)")
