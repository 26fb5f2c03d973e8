"""A newcomer's first runs, on a machine that has never run the kit: README's main command and the web
UI's first start, each from a fresh copy of the checkout with an empty HOME and no caches (a warm
matplotlib font cache hid a lost report once: issue 23)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import httpx
import pytest

from lifecycle.target import free_port
from tests import newcomer
from tests.browser import HEADLESS_CHROMIUM, answers, terminate
from tests.locust_runs import wait_for

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
    clone, home = fresh
    port = free_port()
    web_ui = [arg for arg in newcomer.main_command() if arg != "--headless"]  # README: without --headless
    log = clone / "web-ui.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [*web_ui, "--web-port", str(port)],
            cwd=clone,
            env=newcomer.newcomer_env(home),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(url), 60, "the web UI")
        if shutil.which("chromium"):  # the form as a browser under that HOME renders it
            dom = subprocess.run(
                [*HEADLESS_CHROMIUM, "--virtual-time-budget=8000", "--dump-dom", url],
                env=newcomer.newcomer_env(home),
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
            assert "Load Profile" in re.sub(r"<(script|style).*?</\1>", "", dom, flags=re.S)
        form = {"user_count": "1", "spawn_rate": "1", "load_profile": "smoke", "duration": "3s"}
        assert httpx.post(f"{url}/swarm", data=form, timeout=30).json()["success"]
        wait_for(lambda: "stop_reason" in _run_json(clone), 90, "the run's end")
        report = next((clone / "runs").glob("*/")) / "report.html"
        # written after run.json (kit/finish.py); a traceback in the log means it never will be
        wait_for(lambda: report.is_file() or newcomer.TRACEBACK in log.read_text(), 60, "the report")
    finally:
        terminate(proc)
    output = log.read_text(errors="replace")
    assert (_run_json(clone)["stop_reason"], _run_json(clone)["exit_code"]) == ("profile complete", 0)
    assert newcomer.TRACEBACK not in output, output[-3000:]


def _run_json(clone) -> dict:
    """The run.json of the web UI's one run so far ({} before it exists or while it is rewritten)."""
    try:
        [path] = (clone / "runs").glob("*/run.json")
        return json.loads(path.read_text())
    except (ValueError, OSError):
        return {}
