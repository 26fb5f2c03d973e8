"""The project's own papers: a licence, a changelog kept from this version on, and the version in one
place (pyproject.toml) that every run records. Pure file reads; starts nothing."""

from __future__ import annotations

import re
import tomllib

from kit import rundir
from tests.paths import REPO


def pyproject_version() -> str:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_version_run_json_records_is_pyprojects(tmp_path):
    assert rundir.KIT_VERSION == pyproject_version() == rundir.versions()["kit"]
    (tmp_path / "pyproject.toml").write_text('[project]\nversion = "9.8.7"\n')
    assert rundir.kit_version(tmp_path / "pyproject.toml") == "9.8.7"
    assert rundir.kit_version(tmp_path / "absent.toml") == "unknown"


def test_the_changelog_has_an_unreleased_section_and_the_current_version_as_its_newest_release():
    headings = re.findall(r"^## (.+)$", (REPO / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert headings[0] == "Unreleased", headings
    released = [h.split(" - ")[0] for h in headings[1:]]
    assert released and released[0] == pyproject_version(), (released, pyproject_version())
    assert all(re.fullmatch(r"\d+\.\d+\.\d+ - \d{4}-\d{2}-\d{2}", h) for h in headings[1:]), headings


def test_the_licence_is_mit():
    assert (REPO / "LICENSE").read_text().startswith("MIT License\n")


# The user's door: the peers' READMEs are 6-21 KB; the rest lives in docs/. Under 20 KB: a line added
# where a user must see it fits; a chapter that belongs in docs/ does not.
README_BUDGET_BYTES = 20 * 1024
# a repository path README names: docs/x.md, examples/..., benchmarks/x.py, a top-level file
README_PATH = re.compile(r"(?<![\w/.-])((?:docs|examples|benchmarks|analysis|dashboards|tests)/[\w./-]*\w)")


def test_the_readme_stays_a_door_under_its_size():
    size = len((REPO / "README.md").read_bytes())
    assert size <= README_BUDGET_BYTES, (
        f"README.md: {size:,} bytes, over {README_BUDGET_BYTES:,}: move to docs/"
    )


def test_every_link_and_path_the_readme_names_exists():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)#\s]+)[^)]*\)", text)
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    named = README_PATH.findall(text)
    missing = sorted({p for p in [*local, *named] if not (REPO / p.rstrip(".")).exists()})
    assert len(local) >= 2 and len(named) >= 10
    assert not missing, f"README.md names paths that do not exist: {missing}"


# a path CONTRIBUTING names in backticks: a room's file or folder, a top-level file
CONTRIBUTING_PATH = re.compile(r"`((?:[a-z_]+/)+[\w.<>-]*|[A-Za-z_-]+\.(?:md|py|toml|txt|sh))`")


def test_every_path_contributing_names_exists():
    """CONTRIBUTING's worked paths are walked by a newcomer: each file it names must be there (a name with
    a placeholder, `agents/<protocol>.py`, stands for a file to create: its folder must be there)."""
    named = CONTRIBUTING_PATH.findall((REPO / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    paths = {p.split("<")[0] if "<" in p else p for p in named}
    missing = sorted(p for p in paths if not (REPO / p).exists())
    assert len(paths) >= 30, sorted(paths)
    assert not missing, f"CONTRIBUTING.md names paths that do not exist: {missing}"
