"""Each option is declared once, in its `add(...)` call (contract/cli.py): renaming it there renames it in
the parser and its LOCUST_* variable, the start form's groups, the workload reader and docs/options.md.
The same checks run on the option as declared and renamed, so they see the name, not a fixed list."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from contract.cli import add, form_groups
from kit import start_form
from kit.help import kit_parser
from kit.options_doc import render
from scenarios.errors import WorkloadError
from scenarios.workloads import options as workload_options
from scenarios.workloads.settings import read_workload

DECLARED, RENAMED = "--input-tokens", "--prompt-tokens"


@pytest.fixture(params=[DECLARED, RENAMED])
def flag(request, monkeypatch) -> str:
    """The flag --input-tokens has after its one declaration, as written or renamed to --prompt-tokens."""
    if request.param == RENAMED:

        def add_renamed(group, *flags: str, **kwargs):
            return add(group, *(RENAMED if f == DECLARED else f for f in flags), **kwargs)

        monkeypatch.setattr(workload_options, "add", add_renamed)
    return request.param


def other(flag: str) -> str:
    return RENAMED if flag == DECLARED else DECLARED


def dest(flag: str) -> str:
    return flag.removeprefix("--").replace("-", "_")


def test_the_parser_and_locust_variable_take_the_declared_name(flag):
    parser = kit_parser()
    action = parser._option_string_actions[flag]
    assert action.env_var == "LOCUST_" + dest(flag).upper()
    assert vars(parser.parse_known_args([flag, "300"])[0])[dest(flag)] == "300"
    assert other(flag) not in parser._option_string_actions


def test_the_start_form_groups_the_declared_name_with_the_workload(flag):
    parser = kit_parser()
    fields = {d: {"help_text": a.help} for d, a in parser.args_included_in_web_ui.items()}  # Locust's form
    grouped = start_form.grouped(fields, form_groups(parser._actions))
    assert grouped[dest(flag)]["help_text"].startswith("workload: mean input tokens")
    assert dest(other(flag)) not in grouped


def test_the_workload_reader_takes_the_declared_name_and_names_it_in_errors(flag):
    assert read_workload(SimpleNamespace(**{dest(flag): "300"})).input.mean == 300
    assert read_workload(SimpleNamespace(**{dest(other(flag)): "300"})).input is None
    with pytest.raises(WorkloadError, match=f"^{flag} 0: a prompt is at least 1 token"):
        read_workload(SimpleNamespace(**{dest(flag): "0"}))


def test_the_options_doc_shows_the_declared_name_with_its_group_and_workload_key(flag):
    rows = {m[0]: m[1:] for m in re.findall(r"^\| `(--[a-z0-9-]+)` \|.*\| (\w*) \| (.*) \|$", render(), re.M)}
    assert rows[flag] == ("workload", "`[input] mean`")
    assert other(flag) not in rows


def test_an_option_names_a_form_group_of_the_start_form():
    parser = kit_parser()
    with pytest.raises(ValueError, match="--odd: form group 'extras' is none of"):
        add(parser, "--odd", form_group="extras")
    parser.add_argument("--plugin-option", default=None)  # another plugin's, Locust's own add_argument
    assert form_groups(parser._actions)["plugin_option"] == "profile"
