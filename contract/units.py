"""The human units users type and read: durations ("30s", "2m", "1h30m"), sizes ("512MiB", "1GiB"), and
positive or whole numbers, parsed into plain numbers (seconds, bytes), and values in file units shown back
the same way.

Parsing raises ValueError with the accepted forms (callers add where); showing never fails.
"""

from __future__ import annotations

import math
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


def positive_number(text: object) -> float:
    """A finite number > 0 from what a user typed ("2.5", " 4 "): the one rule of every option, form
    field and file value that must be one."""
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ValueError("must be a number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError("must be a finite number > 0")
    return value


def whole_number(text: object, least: int = 0) -> int:
    """A whole number >= `least` from what a user typed (int() would take "-5", float() "2.0")."""
    digits = str(text).strip()
    if not digits.isdigit():
        raise ValueError(f"must be a whole number >= {least}")
    if int(digits) < least:
        raise ValueError(f"must be at least {least}")
    return int(digits)


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


_BOX = re.compile(r"\s*([^,]+?)\s*,\s*(\d+(?:\.\d+)?)\s*cores?\s*")


def parse_boxes(text: str) -> list[tuple[float, float]]:
    """Machines to project to, "4GiB,2cores;8GiB,4cores" -> [(bytes, cores), ...] (the fit profile's
    --project, read again by its report); ValueError naming the bad one."""
    boxes = []
    for part in text.split(";"):
        m = _BOX.fullmatch(part)
        if not m:
            raise ValueError(f"{part.strip()!r} is not MEMORY,Ncores (e.g. 4GiB,2cores)")
        memory, cores = parse_size(m.group(1)), float(m.group(2))
        if memory <= 0 or cores <= 0:
            raise ValueError(f"{part.strip()!r}: memory and cores must be more than 0")
        boxes.append((memory, cores))
    return boxes


# A name's file unit, by the suffix the run directory's names carry (contract/schema.py): bytes,
# milliseconds, seconds, percent.
_SUFFIX_UNITS = (("_bytes", "bytes"), ("_ms", "ms"), ("_s", "s"), ("_pct", "pct"))


def unit_of(name: str) -> str:
    """The file unit a column or parameter name says (`target_rss_bytes`: bytes); "count" otherwise."""
    return next((unit for suffix, unit in _SUFFIX_UNITS if name.endswith(suffix)), "count")


def show(value: float | None, unit: str) -> str:
    """A value in its file unit ("bytes", "ms", "s", "pct", "ratio", "count") as people read it:
    183.2 MiB, 1 GiB, 478.3 ms, 4m30s, 12.5 %; sizes and durations as they would be typed back."""
    if value is None or value != value:  # None or NaN
        return "—"
    if unit == "bytes":
        return _size(value)
    if unit == "s":
        return _duration(value)
    if unit == "ms":
        return f"{_number(value)} ms"
    if unit in ("pct", "ratio"):
        return f"{_number(value * (100 if unit == 'ratio' else 1))} %"
    return _number(value)


def show_field(name: str, value: object) -> str:
    """A named value (a profile parameter, a column) in the unit its name says; text and lists as they are."""
    if value is None:
        return "—"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return show(float(value), unit_of(name))


def _number(value: float) -> str:
    """Grouped thousands, at most one decimal (none from 1,000 on)."""
    if abs(value) >= 1000 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def _size(value: float) -> str:
    for unit, scale in (("GiB", _BYTES["GIB"]), ("MiB", _BYTES["MIB"]), ("KiB", _BYTES["KIB"])):
        if abs(value) >= scale:
            return f"{value / scale:,.{2 if unit == 'GiB' else 1}f}".rstrip("0").rstrip(".") + f" {unit}"
    return f"{value:,.0f} B"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:g}s"
    whole = round(seconds)
    parts = [(whole // 3600, "h"), (whole % 3600 // 60, "m"), (whole % 60, "s")]
    return "".join(f"{n}{u}" for n, u in parts if n)
