"""`python -m kit.options_doc`: docs/options.md, every option of the kit rendered from the option registry
(kit/options.py with each room's declarations, and the profiles' scenarios/registry.py), grouped as
the parser groups them, with each option's start-form group and workload-file key as its one
declaration (contract/cli.py `add`) says.

Renders and writes that one file; a test fails when the committed file differs from what this renders.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from locust.argument_parser import get_empty_argument_parser

from contract.cli import form_groups, workload_options
from kit.help import kit_parser

DOC = Path(__file__).resolve().parents[1] / "docs" / "options.md"
COMMAND = "python -m kit.options_doc"
PROFILES = "profiles and thresholds"  # the profiles' options sit in no group of their own
_FLAGS = (argparse._StoreTrueAction, argparse._StoreFalseAction)  # a flag's default says nothing
_INTRO = f"""# Every option

Generated from the option registry by `{COMMAND}` (a test fails when this file differs from
what it renders): the kit's options, added to Locust's own (`-u`, `-r`, `-t`, `--host`, `--csv`,
`--html`, ... all work as Locust documents them). Each is also read from its `LOCUST_...` environment
variable (`--peak-users`: `LOCUST_PEAK_USERS`) and from `locust.conf`; "web UI" names the start form's
group of the ones the form shows, "workload file" the key of a workload file (docs/workloads.md) the
option overrides (`[think]`: the whole section; `seed`: the top level). Every duration takes `30s`,
`2m`, `1h`, `1h30m`, `250ms` or plain seconds (`90`); sizes take `512MiB`, `1GiB`. `python -m kit.help`
prints the same options with their help text.
"""


def render() -> str:
    """docs/options.md's text: one table per group, the profiles' first."""
    parser = kit_parser()
    locust_own = {action.dest for action in get_empty_argument_parser(add_help=False)._actions}
    grouped: dict[str, list[argparse.Action]] = {PROFILES: []}
    titles = {PROFILES: f"**{PROFILES}**"}
    for group in parser._action_groups:
        if group.title and group.title.startswith("loadkit: "):
            name = group.title.removeprefix("loadkit: ")
            grouped[name] = list(group._group_actions)
            titles[name] = f"**{name}**" + (f": {group.description}" if group.description else "")
    in_groups = {id(action) for actions in grouped.values() for action in actions}
    grouped[PROFILES] = [a for a in parser._actions if a.dest not in locust_own and id(a) not in in_groups]
    tables = [_table(titles[name], actions, parser) for name, actions in grouped.items()]
    return "\n".join([_INTRO, *tables])


def _table(title: str, actions: list[argparse.Action], parser: argparse.ArgumentParser) -> str:
    formatter = parser._get_formatter()
    groups = form_groups(actions)
    keys = {id(action): key for key, action in workload_options(actions).items()}
    rows = [
        f"| `{', '.join(a.option_strings)}` | {_default(a)} | {_cell(formatter._expand_help(a))} | "
        f"{groups.get(a.dest, '')} | {_workload_key(keys.get(id(a)))} |"
        for a in actions
    ]
    header = ["| option | default | what it does | web UI | workload file |", "|---|---|---|---|---|"]
    return "\n".join([title, "", *header, *rows, ""])


def _workload_key(key: tuple[str, str] | None) -> str:
    """A workload key as docs/workloads.md writes it: `[input] mean`, `[think]`, `seed` (top level)."""
    if key is None:
        return ""
    section, name = key
    return "`" + " ".join(part for part in (f"[{section}]" if section else "", name) if part) + "`"


def _default(action: argparse.Action) -> str:
    shown = "" if isinstance(action, _FLAGS) or action.default in (None, "") else f"`{action.default}`"
    if action.choices:
        shown += " (" + _cell(" | ".join(str(c) for c in action.choices)) + ")"
    return shown.strip()


def _cell(text: str) -> str:
    """A table cell: one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def write(path: Path = DOC) -> Path:
    path.write_text(render(), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(f"written: {write()}")
