"""Helpers to register command-line options on Locust's parser, shared by every room that adds options.

Registration only: no room reads raw options through here (settings are converted once, in kit/).
"""

from __future__ import annotations

import argparse


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def add(group, *flags: str, web_ui: bool = False, **kwargs):
    """Add an option to a group; `web_ui` shows it in Locust's start form (as Locust's own
    add_argument does, which groups lack)."""
    action = group.add_argument(*flags, **kwargs)
    action.include_in_web_ui = web_ui
    action.is_secret = action.is_required = action.is_multiple = False
    return action
