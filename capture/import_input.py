"""An import's input file, read as carefully as the recorder reads its agents: a regular file only (a FIFO
would hang the import, a device such as /dev/zero never ends, a directory is not an export), within a
size ceiling (`--max-bytes`), as JSON Lines a line at a time within a line cap, or as one JSON document,
and every way it can fail is SessionImportError with the one line the user sees.

Which form: a file whose first non-blank line is a whole JSON value is JSON Lines (the OpenTelemetry
collector's file exporter writes one export a line; LiteLLM loggers one call a line); otherwise it is one
document (a pretty-printed export, a JSON array), parsed whole: its size is within the ceiling.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from capture.session_log import SessionImportError

DEFAULT_MAX_BYTES = 256 * 1024 * 1024  # a document is parsed whole: several times its size in memory
MAX_LINE_BYTES = 64 * 1024 * 1024  # one export or call a line: past this no exporter wrote it
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
)


def checked_input(path: Path, max_bytes: int) -> int:
    """The input's size once it is a regular file within the ceiling; stat only, never an open that
    could block (a FIFO)."""
    try:
        mode = os.stat(path)
    except OSError as exc:
        raise SessionImportError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    for test, kind in _KINDS:
        if test(mode.st_mode):
            raise SessionImportError(f"{path}: {kind}, not a file: give the exported file")
    if mode.st_size > max_bytes:
        raise SessionImportError(
            f"{path}: {mode.st_size:,} bytes, over the {max_bytes // 2**20:,} MiB ceiling (--max-bytes)"
        )
    return mode.st_size


def documents(path: Path, max_bytes: int) -> Iterator[tuple[str, object]]:
    """(where, JSON value) of each JSON Lines line (`file:line`), or of the one document (`file`)."""
    checked_input(path, max_bytes)
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise SessionImportError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    with handle:
        first, number = _first_line(handle)
        if first is None:
            raise SessionImportError(f"{path}: empty")
        if _whole_value(first):
            yield f"{path}:{number}", _parsed(first, path, number)
            yield from _lines(handle, path, number)
        else:
            handle.seek(0)
            yield str(path), _parsed(handle.read(max_bytes + 1), path, 1)


def _first_line(handle) -> tuple[bytes | None, int]:
    number = 0
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if raw.strip():
            return raw, number
    return None, number


def _whole_value(line: bytes) -> bool:
    """Whether a line is one whole JSON value (JSON Lines), not the start of a longer document."""
    if len(line) > MAX_LINE_BYTES:
        return False
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _lines(handle, path: Path, number: int) -> Iterator[tuple[str, object]]:
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            raise SessionImportError(f"{path}:{number}: a line over {MAX_LINE_BYTES // 2**20} MiB")
        if raw.strip():
            yield f"{path}:{number}", _parsed(raw, path, number)


def _parsed(raw: bytes, path: Path, first_line: int) -> object:
    """One JSON value starting on `first_line`; one line naming the file and line if it is not one (not
    UTF-8, not JSON, nested deeper than Python's parser goes)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SessionImportError(f"{path}:{first_line}: not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line = first_line + min(exc.lineno, raw.count(b"\n") or 1) - 1  # an end cut short: its last line
        raise SessionImportError(f"{path}:{line}: not JSON ({exc.msg})") from None
    except RecursionError:
        raise SessionImportError(f"{path}:{first_line}: JSON nested too deep to read (refused)") from None
