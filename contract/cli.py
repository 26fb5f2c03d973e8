"""Helpers to register command-line options on Locust's parser, shared by every room that adds options.

Registration only: no room reads raw options through here (settings are converted once, in kit/).
"""

from __future__ import annotations

import argparse
import math

from contract.units import parse_duration, positive_number, whole_number


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


def add(group, *flags: str, web_ui: bool = False, **kwargs):
    """Add an option to a group, settable by its LOCUST_* variable and in locust.conf like Locust's own;
    `web_ui` shows it in Locust's start form (as Locust's own add_argument does, which groups lack)."""
    action = group.add_argument(*flags, env_var=env_var(flags[-1]), **kwargs)
    action.include_in_web_ui = web_ui
    action.is_secret = action.is_required = action.is_multiple = False
    return action
