"""The web UI: the kit's options in Locust's start form and the target's resources in a live tab.

A real `locust -f locustfile.py` web UI process on a free loopback port; a real browser when Chromium is
installed (.ci/run installs it).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import httpx
import pytest

from lifecycle.target import free_port
from tests.locust_runs import REPO, wait_for


@pytest.fixture
def web_ui(tmp_path):
    port = free_port()
    cmd = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(REPO / "locustfile.py"),
        "--web-host",
        "127.0.0.1",
        "--web-port",
        str(port),
        "--run-dir",
        str(tmp_path / "run"),
        "--sample-interval",
        "0.2",
    ]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url), 30, "the web UI")
        yield url
    finally:
        proc.terminate()
        proc.wait(30)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def _resources(url: str) -> dict[str, dict]:
    stats = httpx.get(f"{url}/stats/requests", timeout=5).json()
    [table] = [t for t in stats.get("extended_stats", []) if t["key"] == "loadkit-resources"]
    return {row["name"]: row for row in table["data"]}


def test_start_form_offers_the_profiles_as_a_dropdown(web_ui):
    page = httpx.get(web_ui, timeout=5).text
    assert '"extended_tabs": [{"key": "loadkit-resources", "title": "Resources"}]' in page
    extra, _ = json.JSONDecoder().raw_decode(page.split('"extra_options": ', 1)[1])
    assert "smoke" in extra["load_profile"]["choices"] and "rounds" in extra["load_profile"]["choices"]
    assert "gateway" not in extra  # start-up options stay on the command line


def test_resources_tab_shows_the_sampled_target_before_and_during_load(web_ui):
    wait_for(lambda: "target RSS (MiB)" in _resources(web_ui), 20, "a first sample in the tab")
    rss = float(_resources(web_ui)["target RSS (MiB)"]["now"].replace(",", ""))
    assert 10 < rss < 500  # the simulator's own process, read by the side sampler


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium not installed")
def test_a_real_browser_renders_the_kit_options_in_the_start_form(web_ui):
    dom = subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--virtual-time-budget=8000",
            "--dump-dom",
            web_ui,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    rendered = re.sub(r"<(script|style).*?</\1>", "", dom, flags=re.S)  # text React put on the page
    assert "Load Profile" in rendered and "Memory Budget" in rendered
