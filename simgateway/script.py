"""Scripts for the scripted model, as data: "when the request offers tool X and the conversation says Y,
call X with Z", loaded from a small TOML file (`--script FILE`, examples in simgateway/scripts/).

Loading validates every rule and fails with one line naming the file, the rule and the field; matching is
pure. Must not decide anything a script does not say (scripted.py falls back to the knobs).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from contract.templates import fill

RULE_FIELDS = frozenset({"offers", "says", "call", "arguments", "times"})
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class ScriptError(ValueError):
    """A script file that cannot be used; the message is one line naming the file, rule and field."""


@dataclass(frozen=True)
class Rule:
    """One scripted step: fires while the turn has called `call` fewer than `times` times."""

    offers: str  # the request must offer this tool
    says: re.Pattern[str] | None  # searched in the conversation's messages; None: any conversation
    call: str  # the tool to call (default: the offered one)
    arguments: dict | None  # None: made up from the tool's schema; strings may name `says` groups: {name}
    times: int = 1

    def arguments_for(self, match: re.Match[str] | None) -> dict | None:
        """The call's arguments, with `{group}` in string values replaced by what `says` captured."""
        if self.arguments is None:
            return None
        groups = {k: v for k, v in (match.groupdict() if match else {}).items() if v is not None}
        return cast(dict, fill(self.arguments, groups, _PLACEHOLDER))  # a table stays a table


@dataclass(frozen=True)
class Script:
    path: str
    rules: tuple[Rule, ...]


def load_script(path: str) -> Script:
    """Read and validate a script file; ScriptError (one line) when it cannot be used."""
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise ScriptError(f"{path}: cannot read: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ScriptError(f"{path}: not TOML: {e}") from None
    unknown = set(doc) - {"rule"}
    if unknown:
        raise ScriptError(f"{path}: unknown table or key {sorted(unknown)[0]!r} (expected [[rule]])")
    rules = doc.get("rule", [])
    if not isinstance(rules, list) or not rules:
        raise ScriptError(f"{path}: no [[rule]] tables")
    return Script(path, tuple(_rule(path, i, r) for i, r in enumerate(rules, 1)))


def _rule(path: str, n: int, raw: dict) -> Rule:
    where = f"{path}: rule {n}"
    unknown = set(raw) - RULE_FIELDS
    if unknown:
        raise ScriptError(f"{where}: unknown field {sorted(unknown)[0]!r}")
    offers = raw.get("offers")
    if not isinstance(offers, str) or not offers:
        raise ScriptError(f"{where}: 'offers' must name a tool")
    call = raw.get("call", offers)
    if not isinstance(call, str) or not call:
        raise ScriptError(f"{where}: 'call' must name a tool")
    arguments = raw.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise ScriptError(f"{where}: 'arguments' must be a table")
    times = raw.get("times", 1)
    if not isinstance(times, int) or isinstance(times, bool) or times < 1:
        raise ScriptError(f"{where}: 'times' must be an integer >= 1")
    says = _pattern(where, raw.get("says"))
    _check_placeholders(where, arguments, says)
    return Rule(offers, says, call, arguments, times)


def _check_placeholders(where: str, arguments: object, says: re.Pattern[str] | None) -> None:
    """Every `{name}` in the arguments names a group of `says` (else it would be sent as it is)."""
    groups = set(says.groupindex) if says is not None else set()
    for text in _strings(arguments):
        missing = next((name for name in _PLACEHOLDER.findall(text) if name not in groups), None)
        if missing is not None:
            known = ", ".join(sorted(groups)) or "none: give 'says' a (?P<name>...) group"
            raise ScriptError(f"{where}: 'arguments' {{{missing}}}: no such group in 'says' ({known})")


def _strings(value: object) -> list[str]:
    """The strings of a TOML value, tables and arrays included."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _pattern(where: str, says: object) -> re.Pattern[str] | None:
    if says is None:
        return None
    if not isinstance(says, str):
        raise ScriptError(f"{where}: 'says' must be a regular expression string")
    try:
        return re.compile(says)
    except re.error as e:
        raise ScriptError(f"{where}: 'says' is not a regular expression: {e}") from None
