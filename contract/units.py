"""Parse the human units users type: durations ("30s", "2m", "1h30m") and sizes ("512MiB", "1GiB").

Returns plain floats (seconds, bytes) or raises ValueError with the accepted forms; callers add where.
"""

from __future__ import annotations

import re

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)?", re.IGNORECASE)
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
MAX_DURATION_S = 30 * 86_400.0  # 30 days: beyond any soak; refuses a typo such as 999999999h
_BYTES = {
    "B": 1,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
    "KIB": 1024,
    "MIB": 1024**2,
    "GIB": 1024**3,
    "TIB": 1024**4,
}


def parse_duration(text: str) -> float:
    """Seconds from "30s", "2m", "1h", "1h30m", "250ms" or a bare number of seconds ("90"), at most
    MAX_DURATION_S."""
    s = text.strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", s):
        return _at_most_max(float(s), text)
    parts = _DURATION_PART.findall(s)
    if not parts or "".join(n + u for n, u in parts) != s:
        raise ValueError(f"{text!r} is not a duration (use e.g. 30s, 2m, 1h, 1h30m)")
    return _at_most_max(sum(float(n) * _SECONDS[u] for n, u in parts), text)


def _at_most_max(seconds: float, text: str) -> float:
    if not seconds <= MAX_DURATION_S:  # inf from a 400-digit number too
        raise ValueError(f"{text!r} is longer than the maximum, {MAX_DURATION_S / 86_400:g} days")
    return seconds


def parse_size(text: str) -> float:
    """Bytes from "1GiB", "512MiB", "1.5GB", "4096" (binary units are powers of 1024, SI of 1000)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a size (use e.g. 512MiB, 1GiB, 1.5GB or bytes)")
    return float(m.group(1)) * _BYTES[(m.group(2) or "B").upper()]
