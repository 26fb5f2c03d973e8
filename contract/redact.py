"""The one redaction of secrets: the value of a secret-looking argument or environment assignment in a
command line (a script given as one word included), the userinfo of any URL (`http://user:pass@host`),
and the configured secrets' values (API key, --host password) in any text the kit writes or prints.

Pure text functions and the set of secret values the run registered; nothing here reads a file.
"""

from __future__ import annotations

import json
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
# keys whose text is JSON itself: a tool call's arguments (OpenAI chat and Responses, in answers and in the
# messages that repeat them), whose secret-named keys are masked as a body's are
_JSON_TEXT_KEYS = frozenset({"arguments"})
_SECRETS: set[str] = set()
MIN_SECRET_LEN = 4  # shorter values would mask ordinary text


def add_secret(value: str | None) -> None:
    """Register a secret value (the configured API key, a URL's password) to be masked wherever `redact`
    runs."""
    if value and len(value) >= MIN_SECRET_LEN:
        _SECRETS.add(value)


def redact(text: str) -> str:
    """`text` with every URL's userinfo and every registered secret value masked."""
    if "://" in text:  # no URL, no userinfo: most cells (a row per request) skip the expression
        text = _USERINFO.sub(rf"\1{MASK}@", text)
    for secret in _SECRETS:
        text = text.replace(secret, MASK)
    return text


def is_secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name)) and not _VARIABLE_NAME.search(name)


# header names whose values are credentials, as a body may repeat them (`extra_headers.Authorization`):
# is_secret_name leaves "author..." alone, so they are named here
_CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "set-cookie"})


def is_secret_key(name: str) -> bool:
    """A JSON key whose value is a secret: named like one, or a credential header's name."""
    return is_secret_name(name) or name.lower() in _CREDENTIAL_HEADERS


def secret_values(value: object) -> list[str]:
    """The text values of the secret-named keys at any depth of a JSON value (to mask where they recur)."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(inner, str) and is_secret_key(str(key)):
                    found.append(inner.split(" ", 1)[-1])  # a header's "Bearer X": X recurs alone too
                elif isinstance(inner, str) and key in _JSON_TEXT_KEYS:
                    stack.append(_json_object(inner))
                else:
                    stack.append(inner)
        elif isinstance(item, list):
            stack.extend(item)
    return [v for v in found if len(v) >= MIN_SECRET_LEN]


def redact_json(value: object, secrets: Sequence[str] = ()) -> object:
    """A JSON value with its secrets masked at any depth: the text or number of every secret-named key
    (an object or list under one is searched, so a tool's schema with a `token` parameter keeps its
    shape), and in every text `secrets`, the registered secrets and any URL's userinfo (`redact`)."""
    if isinstance(value, dict):
        return redact_object(value, secrets)
    if isinstance(value, list):
        return [redact_json(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:
            if len(secret) >= MIN_SECRET_LEN:
                value = value.replace(secret, MASK)
        return redact(value)
    return value


def redact_object(value: dict, secrets: Sequence[str] = ()) -> dict:
    """`redact_json` of a JSON object, typed as one."""
    return {k: _masked_entry(str(k), v, secrets) for k, v in value.items()}


def _masked_entry(key: str, value: object, secrets: Sequence[str]) -> object:
    scalar = isinstance(value, str | int | float) and not isinstance(value, bool)
    if scalar and is_secret_key(key):
        return MASK
    if isinstance(value, str) and key in _JSON_TEXT_KEYS:
        return redact_json_text(value, secrets)
    return redact_json(value, secrets)


def redact_json_text(text: str, secrets: Sequence[str] = ()) -> str:
    """JSON text inside JSON (a tool call's arguments): an object whose masking changes it, re-serialised
    masked; any other text as `redact_json` masks a text, so arguments with no secret stay as they were,
    byte for byte (a replay sends them as recorded)."""
    parsed = _json_object(text)
    if parsed is not None and (masked := redact_object(parsed, secrets)) != parsed:
        return json.dumps(masked, ensure_ascii=False)
    return str(redact_json(text, secrets))


def _json_object(text: str) -> dict | None:
    """The object a JSON text holds; None for any other text (a fragment, a list, not JSON)."""
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
        return None
    return parsed if isinstance(parsed, dict) else None


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
