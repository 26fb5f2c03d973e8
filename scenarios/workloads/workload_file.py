"""The workload file (`--workload FILE`, TOML): its sections and keys checked, each value kept with the
place it was written (file:line), so a bad one is named exactly; the options then override it.

Reads the file and its structure only; what the values mean is scenarios/workloads/settings.py's. Rooms that
add
sections (the agent loop's [tools] and [loop]) register a parser in EXTENSIONS: a section nobody knows
is an error, never ignored.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contract.textfile import read_text
from scenarios.errors import WorkloadError

DISTRIBUTION_KEYS = ("distribution", "mean", "stdev", "min", "max")
SECTIONS: dict[str, tuple[str, ...]] = {
    "input": DISTRIBUTION_KEYS,  # input tokens per request, the shared prefix included
    "output": DISTRIBUTION_KEYS,  # max_tokens per request
    "prefix": ("tokens",),
    "think": DISTRIBUTION_KEYS,  # seconds (numbers, or durations such as "2s")
    "dataset": ("file", "order"),
    "trace": ("file", "speed", "block_tokens"),
}
TOP_KEYS = ("seed",)
FILE_KEYS = frozenset({("dataset", "file"), ("trace", "file")})  # paths relative to the workload file
# Sections other rooms parse: name -> parser(table, where, folder) returning the section's settings, which
# end up in WorkloadSettings.sections[name]. A parser raises WorkloadError naming `where` and the key; a
# file it names is relative to `folder` (the workload file's).
EXTENSIONS: dict[str, Callable[[dict[str, Any], str, Path], Any]] = {}
_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]")


@dataclass(frozen=True)
class Value:
    """A value and where the user wrote it: "FILE:LINE: [section] key" or "--flag"; `section` is the
    place without the key ("FILE:LINE: [section]"), for errors that name the key themselves."""

    value: Any
    where: str
    section: str = ""

    @property
    def place(self) -> str:
        return self.section or self.where


@dataclass
class WorkloadFile:
    path: str
    fields: dict[tuple[str, str], Value] = field(default_factory=dict)  # (section, key); top level ""
    sections: dict[str, Any] = field(default_factory=dict)  # parsed extension sections


def read_workload_file(path: str) -> WorkloadFile:
    text = read_text(path, WorkloadError, "workload file")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadError(f"{path}: not valid TOML ({exc})") from None
    found = WorkloadFile(path)
    lines = text.splitlines()
    for name, value in doc.items():
        if name in TOP_KEYS:
            found.fields[("", name)] = Value(value, _where(path, lines, None, name))
        elif name in EXTENSIONS:
            found.sections[name] = EXTENSIONS[name](
                _table(value, path, lines, name), _where(path, lines, name), Path(path).parent
            )
        elif name in SECTIONS:
            _read_section(found, name, _table(value, path, lines, name), lines)
        else:
            known = ", ".join([*TOP_KEYS, *(f"[{s}]" for s in [*SECTIONS, *EXTENSIONS])])
            where = _where(path, lines, name) if isinstance(value, dict) else _where(path, lines, None, name)
            raise WorkloadError(f"{where}: unknown; the file knows {known}")
    return found


def _read_section(found: WorkloadFile, name: str, table: dict[str, Any], lines: list[str]) -> None:
    for key, value in table.items():
        where = _where(found.path, lines, name, key)
        if key not in SECTIONS[name]:
            raise WorkloadError(f"{where}: unknown key; [{name}] takes {', '.join(SECTIONS[name])}")
        if (name, key) in FILE_KEYS:
            if not isinstance(value, str):
                raise WorkloadError(f"{where}: expected a file name (text)")
            value = str(Path(found.path).parent / value)
        found.fields[(name, key)] = Value(value, where, _where(found.path, lines, name))


def _table(value: Any, path: str, lines: list[str], name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise WorkloadError(f"{_where(path, lines, None, name)}: expected a section [{name}]")
    return value


def _where(path: str, lines: list[str], section: str | None, key: str | None = None) -> str:
    """ "FILE:LINE: [section] key" for a key (its line found by scanning the text: tomllib gives none)."""
    line = _line_of(lines, section, key)
    label = f"[{section}] {key}" if section and key else f"[{section}]" if section else str(key)
    return f"{path}:{line}: {label}" if line else f"{path}: {label}"


def _line_of(lines: list[str], section: str | None, key: str | None) -> int | None:
    current: str | None = None
    for number, line in enumerate(lines, 1):
        header = _HEADER.match(line)
        if header:
            current = header.group(1).strip("\"' ")
            if key is None and current == section:
                return number
            continue
        if (
            key is not None
            and current == section
            and re.match(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=", line)
        ):
            return number
    return None
