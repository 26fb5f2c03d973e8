"""docs/options.md is what the option registry renders (`python -m kit.options_doc`), so the reference of
every option cannot drift from the parser; README's short table names only registered options."""

from __future__ import annotations

import re

from kit.help import kit_parser
from kit.options_doc import COMMAND, DOC, render
from tests.paths import REPO


def kit_flags() -> set[str]:
    return {
        flag for action in kit_parser()._actions for flag in action.option_strings if flag.startswith("--")
    }


def test_the_committed_options_doc_is_what_the_registry_renders():
    assert DOC.read_text(encoding="utf-8") == render(), (
        f"docs/options.md drifted: regenerate it with `{COMMAND}`"
    )


def test_the_options_doc_has_a_row_for_every_kit_option():
    rows = set(re.findall(r"^\| `(--[a-z0-9-]+)`", render(), re.M))
    assert len(rows) > 90 and "--memory-budget" in rows and "--load-profile" in rows
    assert rows <= kit_flags()
    assert "--host" not in rows and "--users" not in rows  # Locust's own options are Locust's to document


def test_readme_keeps_ten_registered_options_and_points_to_the_doc():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Every option") :].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `(--[a-z0-9-]+)` \|", section, re.M)
    assert len(listed) == 10 and set(listed) <= kit_flags(), listed
    assert "docs/options.md" in section and COMMAND in section
