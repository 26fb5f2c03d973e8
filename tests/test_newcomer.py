"""A newcomer's first runs, on a machine that has never run the kit: README's main command and the web
UI's first start, each from a fresh copy of the checkout with an empty HOME and no caches (a warm
matplotlib font cache hid a lost report once)."""

from __future__ import annotations

import pytest

from tests import newcomer

pytestmark = pytest.mark.e2e


@pytest.fixture
def fresh(tmp_path):
    """(a fresh copy of the checkout, an empty HOME)"""
    home = tmp_path / "home"
    home.mkdir()
    return newcomer.fresh_copy(tmp_path / "clone"), home


def test_readme_names_the_main_command_and_the_files_every_run_writes():
    assert newcomer.main_command() == ["locust", "-f", "locustfile.py", "--headless"]
    assert {"run.json", "requests.csv", "report.md", "report.html", "timeline.png"} <= set(
        newcomer.listed_files()
    )


def test_readmes_main_command_on_a_fresh_machine_writes_everything_readme_lists(fresh):
    clone, home = fresh
    done = newcomer.run_main_command(clone, home)
    checks = newcomer.check_run(clone, done)
    assert all(c.ok for c in checks), newcomer.report(done, checks)


def test_the_web_uis_first_start_on_a_fresh_machine_runs_and_writes_its_report(fresh):
    checks = newcomer.web_ui_first_start(*fresh)
    assert all(c.ok for c in checks), "\n".join(newcomer.listing(checks))
