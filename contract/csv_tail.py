"""Read the rows another process appends to a CSV file, complete lines only, as they arrive.

Used to feed live thresholds from samples.csv while the sampler writes it, and to read why the sampler
stopped (the `event` of its last row); never writes.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path


class CsvTail:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.offset = 0
        self.header: list[str] | None = None

    def new_rows(self) -> list[dict[str, str]]:
        """Rows completed since the last call (a line still being written waits for the next call)."""
        try:
            with open(self.path, "rb") as file:
                file.seek(self.offset)
                chunk = file.read()
        except OSError:
            return []
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(complete)
        lines = complete.decode("utf-8", errors="replace").splitlines()
        if self.header is None and lines:
            self.header, lines = next(csv.reader([lines[0]])), lines[1:]
        return list(csv.DictReader(io.StringIO("\n".join(lines)), fieldnames=self.header)) if lines else []


def last_sample_row(path: Path) -> dict[str, str] | None:
    """The last complete row of samples.csv, if any."""
    try:
        with open(path, newline="", encoding="utf-8") as file:
            rows = list(csv.DictReader(file))
    except OSError:
        return None
    return rows[-1] if rows else None


def last_sample_event(path: Path) -> str | None:
    """The `event` cell of the last complete row of samples.csv, if any."""
    return (last_sample_row(path) or {}).get("event") or None
