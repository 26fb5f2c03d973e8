"""The web UI's start form: what a start will run, shown before it starts, and no value carried over
unseen from one start to the next.

Locust keeps what a start's form set in its parsed options, and its form keeps the last start's values
(the kit's options sit in a folded section). So every start is built from the command line's settings
plus what its form sends, and the preview builds the same settings from the form as it stands, naming the
values the last start left in it.

A list option (--threshold, --slo) has one text in the form, its values joined by LIST_SEPARATOR: shown,
sent and read back alike, run after run (left to Locust, its page shows a list joined by "," and its
/swarm splits it there, unlike the kit). The fields are grouped by the form group each option declares
(contract/cli.py `add`). Reads options and builds settings; starts nothing.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from locust.util.timespan import parse_timespan

from contract.cli import FORM_GROUPS
from contract.errors import KitError, one_line
from contract.units import show, show_field
from kit.settings import KitSettings
from scenarios.options import LIST_SEPARATOR
from scenarios.profile import params_of

RUN_TIME = "run_time"  # Locust's own -t, in the form's folded "Advanced options": carried unseen too
_COMMON = {"user_count": ("num_users", int), "spawn_rate": ("spawn_rate", float)}  # Locust's fields


@dataclass
class StartForm:
    """The form's option fields with their command-line values, and what the last start's form sent."""

    baseline: dict[str, Any]  # option dest -> its value from the command line, locust.conf, LOCUST_*
    initial: dict[str, str]  # option dest -> what a fresh form shows for it
    last: dict[str, str] = field(default_factory=dict)  # the last start's form, as text

    @classmethod
    def of(cls, options: argparse.Namespace, fields: Mapping[str, Mapping[str, Any]]) -> StartForm:
        """`fields`: the form's extra options as Locust lists them (dest -> choices...). A choice with
        no value set shows its first choice."""
        baseline = {dest: copy.copy(getattr(options, dest, None)) for dest in [*fields, RUN_TIME]}
        initial = {dest: form_text(value) for dest, value in baseline.items()}
        for dest, info in fields.items():
            if baseline[dest] is None and info.get("choices"):
                initial[dest] = str(info["choices"][0])
        return cls(baseline, initial)

    def begin(self, options: argparse.Namespace, form: Mapping[str, str]) -> None:
        """A start: the options back to the command line's, then Locust applies this form. A field the
        form does not send (a partial POST /swarm) keeps the command line's value, not the last start's.
        A list option the form sends starts empty: Locust then keeps the field's text as it is (it
        would split a list's on ","), the text the preview reads."""
        for dest, value in self.baseline.items():
            sent_as_text = dest in form and isinstance(value, list)
            setattr(options, dest, None if sent_as_text else copy.copy(value))
        self.last = {dest: form.get(dest, form_text(value)) for dest, value in self.baseline.items()}

    def options_of(self, options: argparse.Namespace, form: Mapping[str, str]) -> argparse.Namespace:
        """The options a start with this form would run with (Locust's conversion of form values)."""
        found = argparse.Namespace(**vars(options))
        for dest, value in self.baseline.items():
            setattr(found, dest, copy.copy(value))
        for key, text in form.items():
            if key in _COMMON:
                dest, kind = _COMMON[key]
                setattr(found, dest, kind(text))
            elif key == RUN_TIME:
                if text:
                    found.run_time = parse_timespan(text)
            elif key in self.baseline:
                setattr(found, key, text)
        return found

    def carried(self, form: Mapping[str, str]) -> list[dict[str, str]]:
        """The form's values that differ from the command line's and are the last start's: left there."""
        return [
            {"field": dest, "value": form[dest]}
            for dest, shown in self.initial.items()
            if dest in form and form[dest] != shown and self.last.get(dest) == form[dest]
        ]


def preview(
    start_form: StartForm,
    options: argparse.Namespace,
    form: Mapping[str, str],
    settings_for: Callable[[argparse.Namespace], KitSettings],
    last_run: str | None,
) -> dict:
    """What START would run with this form: the profile and its parameters (empty fields: its defaults),
    the thresholds, the values carried from the last start (`last_run`), or the one-line error."""
    answer: dict[str, Any] = {"carried": start_form.carried(form), "from_run": last_run, "error": None}
    try:
        settings = settings_for(start_form.options_of(options, form))
        params = params_of(settings.built_profile)  # the preview's own settings: its own build
    except (KitError, ValueError) as exc:  # ValueError: Locust's own fields (user count, run time)
        return answer | {"error": one_line(exc)}
    return answer | {
        "profile": settings.profile_name,
        "params_shown": {name: show_field(name, value) for name, value in params.items()},
        "thresholds": [_threshold_text(th) for th in settings.thresholds],
    }


def _threshold_text(th) -> str:
    flags = (" abort" if th.abort else "") + (f" grace={show(th.grace_s, 's')}" if th.grace_s else "")
    return th.expr + flags


def form_text(value: Any) -> str:
    """An option's value as the form shows it and sends it back."""
    if value is None:
        return ""
    if isinstance(value, list):
        return f"{LIST_SEPARATOR} ".join(map(str, value))
    return str(value)


def lists_as_text(fields: Mapping[str, dict]) -> dict[str, dict]:
    """Locust's form fields (its template's extra_options) with each list option's value as its text."""
    return {
        dest: info | {"default_value": form_text(info["default_value"])}
        if isinstance(info.get("default_value"), list)
        else info
        for dest, info in fields.items()
    }


def grouped(extra: dict, groups: Mapping[str, str]) -> dict:
    """The kit's options in the start form by the group each declares (Locust draws them in this order;
    its own template sorts them by name): the load profile and its parameters, thresholds, then the
    agents' options; each field's label names its group."""

    def group(dest: str) -> str:
        return groups.get(dest, FORM_GROUPS[0])

    order = sorted(extra, key=lambda dest: (FORM_GROUPS.index(group(dest)), dest != "load_profile"))
    return {
        dest: extra[dest] | {"help_text": f"{group(dest)}: {extra[dest].get('help_text') or ''}"}
        for dest in order
    }
