"""Placeholders filled in a template and everything nested in it (the strings inside dicts and lists):
`{name}` becomes its value, a name with no value stays as it is.

Shared by spec files (agents/gateways/spec.py) and the simulator's scripts (simgateway/script.py), each with
the
pattern of the names it knows. Pure: no I/O, nothing parsed beyond the placeholders.
"""

from __future__ import annotations

import re


def fill(template: object, values: dict[str, str], pattern: re.Pattern[str]) -> object:
    """A copy of `template` with each `pattern` match (its group 1 the name) replaced by `values[name]`."""
    if isinstance(template, str):
        return pattern.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    if isinstance(template, dict):
        return {key: fill(value, values, pattern) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, values, pattern) for value in template]
    return template
