"""Helpers to register command-line options on Locust's parser, shared by every room that adds options.

Each option is declared once, by `add`: its flag, type, default and help, and the attributes the rest of
the kit reads off the parser's action (its start-form group, its workload-file key, its LOCUST_*
variable), so a rename in that one call renames it everywhere. Registration only: no room reads raw
options through here (settings are converted once, in kit/).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
from collections.abc import Callable, Iterable
from typing import Any

from contract.errors import InputError
from contract.units import parse_duration, parse_size, positive_number, whole_number

FORM_GROUPS = ("profile", "thresholds", "agents", "workload")  # the start form's groups in order
# An option's conversion into the setting the code reads: (value as given, the option's flag) -> the
# typed value, or InputError naming the flag. Declared on the option's `add(..., convert=...)`; the
# settings (kit/settings.py) apply it to a given value (the web form's text included), never a default.
Convert = Callable[[Any, str], Any]


def positive_float(text: str) -> float:
    """argparse's type for a finite number > 0 (contract/units.py positive_number)."""
    try:
        return positive_number(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def positive_duration(text: str) -> float:
    """Seconds from a duration as every duration option takes it: "30s", "2m", "1h30m", "250ms" or a plain
    number of seconds ("90", "0.5"); finite and > 0."""
    try:
        value = parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a duration > 0, got {text!r}")
    return value


def whole(text: str, least: int = 0) -> int:
    """argparse's type for a whole number >= 0 (argparse's int accepts "-5")."""
    try:
        return whole_number(text, least)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: {exc}") from None


def positive_int(text: str) -> int:
    return whole(text, least=1)


def env_var(flag: str) -> str:
    """The LOCUST_* variable of an option, named as Locust names its own (--run-time: LOCUST_RUN_TIME)."""
    return "LOCUST_" + flag.lstrip("-").replace("-", "_").upper()


def add(
    group,
    *flags: str,
    form_group: str | None = None,
    workload_key: tuple[str, str] | None = None,
    convert: Convert | None = None,
    **kwargs,
):
    """Add an option to a group (or a parser), settable by its LOCUST_* variable and in locust.conf like
    Locust's own. The one record of the option: what else names it reads this action.
    `form_group`: Locust's start form shows it, in that group of FORM_GROUPS (kit/start_form.py).
    `workload_key`: the workload file's (section, key) it overrides (scenarios/workloads/settings.py):
    section "" is the file's top level, key "" the whole section.
    `convert`: how its given value becomes the setting the code reads (the conversions below)."""
    if form_group is not None and form_group not in FORM_GROUPS:
        raise ValueError(f"{flags[-1]}: form group {form_group!r} is none of {FORM_GROUPS}")
    action = group.add_argument(*flags, env_var=env_var(flags[-1]), **kwargs)
    action.include_in_web_ui = form_group is not None  # as Locust's own add_argument sets it
    action.is_secret = action.is_required = action.is_multiple = False
    action.form_group = form_group
    action.workload_key = workload_key
    action.convert = convert
    return action


def flag_of(action: argparse.Action) -> str:
    """The flag an option is named by in messages and its LOCUST_* variable."""
    return action.option_strings[-1]


def duration(value: Any, flag: str) -> float:
    """A time in seconds: "30s", "2m", "1h30m", "250ms" or plain seconds, > 0 (the web form's text too)."""
    try:
        return positive_duration(str(value))
    except argparse.ArgumentTypeError as exc:
        raise InputError(f"{flag} {value!r}: {exc}") from None


def positive(value: Any, flag: str) -> float:
    """A finite number > 0."""
    try:
        return positive_number(value)
    except ValueError as exc:
        raise InputError(f"{flag} {value!r}: {exc}") from None


def positive_whole(value: Any, flag: str) -> int:
    """A whole number >= 1."""
    try:
        return whole_number(value, least=1)
    except ValueError as exc:
        raise InputError(f"{flag} {value!r}: {exc}") from None


def size(value: Any, flag: str) -> int:
    """A size as users type it (64MiB, 1.5GB, bytes) in whole bytes >= 1."""
    try:
        found = int(parse_size(str(value)))
    except ValueError as exc:
        raise InputError(f"{flag}: {exc}") from None
    if found < 1:
        raise InputError(f"{flag} {value!r}: expected a size of at least 1 byte")
    return found


def command_line(value: Any, flag: str) -> str:
    """A command line given as one string: its quoting must close (shlex splits it later)."""
    try:
        shlex.split(str(value))
    except ValueError as exc:
        raise InputError(f"{flag} {value!r}: {exc}") from None
    return str(value)


def sequence(value: Any, flag: str) -> tuple:
    """A repeatable option's values, in order."""
    return tuple(value or ())


def comma_list(value: Any, flag: str) -> tuple[str, ...]:
    """ID[,ID]: the non-empty items."""
    return tuple(item.strip() for item in str(value).split(",") if item.strip())


def json_object(value: Any, flag: str) -> dict[str, Any]:
    """A JSON object given as text, parsed once."""
    try:
        found = json.loads(str(value))
    except ValueError as exc:
        raise InputError(f"{flag}: not valid JSON ({exc})") from None
    if not isinstance(found, dict):
        raise InputError(f"{flag}: expected a JSON object, got {type(found).__name__}")
    return found


def form_groups(actions: Iterable[argparse.Action]) -> dict[str, str]:
    """Option dest -> its group in the start form, for every option the form shows; one that declared
    none (another plugin's, added with Locust's own add_argument) sits with the profile's."""
    return {
        action.dest: getattr(action, "form_group", None) or FORM_GROUPS[0]
        for action in actions
        if getattr(action, "include_in_web_ui", False)
    }


def workload_options(actions: Iterable[argparse.Action]) -> dict[tuple[str, str], argparse.Action]:
    """The workload file's (section, key) -> the option that overrides it."""
    return {key: action for action in actions if (key := getattr(action, "workload_key", None))}
