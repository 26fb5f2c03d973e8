"""Reading a user's text file (thresholds, prices, spec): UTF-8 or one line naming the file and the fault.

Reads only; parsing and checking the content is each room's own job.
"""

from __future__ import annotations

from pathlib import Path

from contract.errors import InputError


def read_text(path: str | Path, error: type[InputError], what: str) -> str:
    """The file's text; `error` (one line: file, what it is, why) when it is unreadable or not UTF-8."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: {what} is not UTF-8 text (byte {exc.start})") from None
