"""Reading a user's text file (thresholds, prices, spec): UTF-8 and at most 4 MiB, or one line naming the
file and the fault.

Reads only; parsing and checking the content is each room's own job.
"""

from __future__ import annotations

from pathlib import Path

from contract.errors import InputError

MAX_TEXT_BYTES = 4 * 1024 * 1024  # a threshold, price or spec file: hand-written tables, never this large


def read_text(path: str | Path, error: type[InputError], what: str) -> str:
    """The file's text; `error` (one line: file, what it is, why) when it is unreadable, larger than
    MAX_TEXT_BYTES or not UTF-8."""
    try:
        with Path(path).open("rb") as handle:
            raw = handle.read(MAX_TEXT_BYTES + 1)
        if len(raw) > MAX_TEXT_BYTES:
            raise error(f"{path}: {what} is larger than {MAX_TEXT_BYTES // (1024 * 1024)} MiB")
        return raw.decode("utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None
