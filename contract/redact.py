"""The one redaction of secrets: the value of a secret-looking argument or environment assignment in a
command line (a script given as one word included), the userinfo of any URL (`http://user:pass@host`),
and the configured secrets' values (API key, --host password) in any text the kit writes or prints.

Pure text functions and the set of secret values the run registered; nothing here reads a file.
"""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Sequence

MASK = "***"
# A name that says "secret" (api-key, TOKEN, --password...); token counts (--max-tokens) and names of
# variables holding a secret (--api-key-env) are not secrets themselves.
_SECRET_NAME = re.compile(
    r"(?<![a-z])key(?![a-z])|api[-_]?key|token(?!s)|secret|passw|auth(?!or)|credential", re.I
)
_VARIABLE_NAME = re.compile(r"[-_]env$", re.I)
_NAME_VALUE = re.compile(r"(--?[A-Za-z][\w-]*|[A-Za-z_]\w*)=(.*)", re.S)
# scheme://USERINFO@ : the userinfo ends at the netloc's last '@' (as urllib.parse splits it)
_USERINFO = re.compile(r"\b([a-z][a-z0-9+.-]*://)[^\s/?#@]*(?:@[^\s/?#@]*)*@", re.I)
_BLANK = re.compile(r"\s")
_SECRETS: set[str] = set()
MIN_SECRET_LEN = 4  # shorter values would mask ordinary text


def add_secret(value: str | None) -> None:
    """Register a secret value (the configured API key, a URL's password) to be masked wherever `redact`
    runs."""
    if value and len(value) >= MIN_SECRET_LEN:
        _SECRETS.add(value)


def redact(text: str) -> str:
    """`text` with every URL's userinfo and every registered secret value masked."""
    text = _USERINFO.sub(rf"\1{MASK}@", text)
    for secret in _SECRETS:
        text = text.replace(secret, MASK)
    return text


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name)) and not _VARIABLE_NAME.search(name)


def redact_args(words: Sequence[str]) -> list[str]:
    """A command line's words with secret values masked: `--api-key X`, `--token=X`, `TOKEN=X`, a URL's
    userinfo, and the same inside a word that is itself a command line (`sh -c '...'`, --target-cmd)."""
    out: list[str] = []
    hide_next = False
    for word in words:
        match = _NAME_VALUE.fullmatch(word)
        if hide_next:
            out.append(MASK)
        elif match and is_secret_name(match.group(1)):
            out.append(f"{match.group(1)}={MASK}")
        elif match and _BLANK.search(match.group(2)):
            out.append(f"{match.group(1)}={_redact_script(match.group(2))}")
        elif _BLANK.search(word):
            out.append(_redact_script(word))
        else:
            out.append(redact(word))
        hide_next = not hide_next and word.startswith("-") and not match and is_secret_name(word)
    return out


def redact_command(text: str) -> str:
    """A command line given as one string, its secret values masked (all of it if it cannot be split)."""
    try:
        return shlex.join(redact_args(shlex.split(text)))
    except ValueError:
        return MASK


def _redact_script(text: str) -> str:
    """A word that is a command line itself: as written when nothing in it is secret, else re-quoted
    with the secrets masked."""
    try:
        words = shlex.split(text)
    except ValueError:
        return MASK
    masked = redact_args(words)
    return redact(text) if masked == words else shlex.join(masked)


class RedactFilter(logging.Filter):
    """A logging filter that masks a record's text with `redact`: a log line says no secret either."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        return True


LOG_FILTER = RedactFilter()
