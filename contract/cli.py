"""Helpers to register command-line options on Locust's parser, shared by every room that adds options.

Each option is declared once, by `add`: its flag, type, default and help, and the attributes the rest of
the kit reads off the parser's action (its start-form group, its workload-file key, its LOCUST_*
variable), so a rename in that one call renames it everywhere. Registration only: no room reads raw
options through here (settings are converted once, in kit/).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable

from contract.units import parse_duration, positive_number, whole_number

FORM_GROUPS = ("profile", "thresholds", "agents", "workload")  # the start form's groups in order


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
    **kwargs,
):
    """Add an option to a group (or a parser), settable by its LOCUST_* variable and in locust.conf like
    Locust's own. The one record of the option: what else names it reads this action.
    `form_group`: Locust's start form shows it, in that group of FORM_GROUPS (kit/start_form.py).
    `workload_key`: the workload file's (section, key) it overrides (scenarios/workloads/settings.py):
    section ""
    is the file's top level, key "" the whole section."""
    if form_group is not None and form_group not in FORM_GROUPS:
        raise ValueError(f"{flags[-1]}: form group {form_group!r} is none of {FORM_GROUPS}")
    action = group.add_argument(*flags, env_var=env_var(flags[-1]), **kwargs)
    action.include_in_web_ui = form_group is not None  # as Locust's own add_argument sets it
    action.is_secret = action.is_required = action.is_multiple = False
    action.form_group = form_group
    action.workload_key = workload_key
    return action


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
