"""Append-only CSV files of the run directory, with the schema's header written once, whole lines only.

Used by the recorder (requests/tasks/agents), the sampler and the capacity profile; it knows nothing of
Locust. A write that fails (disk full, I/O error) leaves the file as it was before that flush.
"""

from __future__ import annotations

import csv
import errno
import io
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from contract.redact import redact


class RunFileError(Exception):
    """A run-directory file could not be written; the message is one line naming the file and cause."""

    def __init__(self, path: Path, exc: OSError):
        self.path = Path(path)
        self.errno = exc.errno
        cause = exc.strerror or str(exc)
        code = f" ({errno.errorcode.get(exc.errno, exc.errno)})" if exc.errno else ""
        super().__init__(f"cannot write {self.path}: {cause}{code}")


class CsvAppender:
    """One CSV file opened for appending; rows are dicts keyed by the given columns. Rows wait in memory
    until `flush`, which appends them whole or, when the write fails, not at all."""

    def __init__(self, path: Path, columns: Iterable[str]):
        self.path = Path(path)
        self.columns = tuple(columns)
        try:
            self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise RunFileError(self.path, exc) from None
        self._size = os.fstat(self._fd).st_size  # the length of the file's whole lines
        self._text = io.StringIO()
        self._writer = csv.DictWriter(self._text, fieldnames=self.columns, extrasaction="ignore")
        self._pending = 0
        self.rows_written = 0  # rows on disk
        if self._size == 0:
            self._writer.writeheader()
            self.flush()

    def write(self, row: Mapping) -> None:
        self._writer.writerow({k: _cell(v) for k, v in row.items()})
        self._pending += 1

    def flush(self) -> None:
        """Append the waiting rows; on failure cut the file back to its last whole line and raise
        RunFileError (the rows stay waiting, so a later flush may still land them)."""
        data = self._text.getvalue().encode("utf-8")
        if self._fd is None or not data:
            return
        try:
            _write_all(self._fd, data)
        except OSError as exc:
            _truncate(self._fd, self._size)
            raise RunFileError(self.path, exc) from None
        self._size += len(data)
        self.rows_written += self._pending
        self._text.seek(0)
        self._text.truncate()
        self._pending = 0

    def close(self) -> None:
        """Flush and close; the file is closed even when the last flush fails (which then raises)."""
        if self._fd is None:
            return
        try:
            self.flush()
        finally:
            os.close(self._fd)
            self._fd = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _truncate(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass  # the partial tail stays; readers skip a last line without its newline (contract/csv_tail.py)


def _cell(value):
    """None and NaN become an empty cell: "not measured", never zero."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return redact(value) if isinstance(value, str) else value
