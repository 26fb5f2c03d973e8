"""Reading a user's JSON Lines file (a dataset, a trace): each non-blank line one JSON value, numbered
as an editor numbers it, so every error can name the file and the line.

Reads and decodes only; what a line must hold is the dataset's or the trace's own check.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from contract.textfile import read_text
from scenarios.errors import WorkloadError


def json_lines(path: str, what: str) -> Iterator[tuple[int, object]]:
    """(line number, value) for each non-blank line; WorkloadError naming the line that is not JSON."""
    text = read_text(path, WorkloadError, what)
    found = False
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            column = f" at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
            raise WorkloadError(f"{path}:{number}: not JSON ({message}{column})") from None
        found = True
        yield number, value
    if not found:
        raise WorkloadError(f"{path}: {what} has no lines")


def whole(value: object, where: str, field: str, minimum: int = 0) -> int:
    """A whole number >= minimum from a JSON field (true/false and 2.5 are not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WorkloadError(f"{where}: {field} {value!r}: expected a whole number >= {minimum}")
    if isinstance(value, float) and not value.is_integer():
        raise WorkloadError(f"{where}: {field} {value!r}: expected a whole number >= {minimum}")
    if value < minimum:
        raise WorkloadError(f"{where}: {field} {value!r}: must be >= {minimum}")
    return int(value)
