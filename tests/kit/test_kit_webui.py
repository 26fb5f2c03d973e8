"""The web UI: the kit's options in Locust's start form and the target's resources in a live tab.

A real `locust -f locustfile.py` web UI process on a free loopback port; a real browser when Chromium is
installed (.ci/run installs it).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import httpx
import pytest

from agents.presets import agent_classes, preset
from kit import webui
from tests.browser import HEADLESS_CHROMIUM, running_web_ui, template_args
from tests.locust_runs import wait_for

pytestmark = pytest.mark.e2e


@pytest.fixture
def web_ui(tmp_path):
    yield from _web_ui(tmp_path)


@pytest.fixture
def web_ui_with_picker(tmp_path):
    yield from _web_ui(tmp_path, "--class-picker")


def _web_ui(tmp_path, *extra: str):
    with running_web_ui(tmp_path / "run", "--sample-interval", "0.2", *extra, ready_s=30) as url:
        yield url


def _resources(url: str) -> dict[str, dict]:
    stats = httpx.get(f"{url}/stats/requests", timeout=5).json()
    [table] = [t for t in stats.get("extended_stats", []) if t["key"] == "loadkit-resources"]
    return {row["name"]: row for row in table["data"]}


def test_start_form_offers_the_profiles_as_a_dropdown_and_groups_the_options(web_ui):
    args = template_args(web_ui)
    assert args["extended_tabs"] == [{"key": "loadkit-resources", "title": "Resources"}]
    extra = args["extra_options"]
    assert "smoke" in extra["load_profile"]["choices"] and "rounds" in extra["load_profile"]["choices"]
    assert "gateway" not in extra  # start-up options stay on the command line
    groups = [extra[dest]["help_text"].split(":", 1)[0] for dest in extra]
    assert list(extra)[0] == "load_profile" and groups == sorted(groups, key=webui.FORM_GROUPS.index)
    assert extra["threshold"]["help_text"].startswith("thresholds: ")
    assert extra["memory_budget"]["help_text"].startswith("profile: ")
    form = httpx.get(f"{web_ui}/loadkit/form.json", timeout=10).json()
    assert form["profiles"]["smoke"] == {"users": 3, "duration_s": 30.0, "baseline_s": 0.0}


def test_class_picker_follows_the_preset_and_keeps_the_kit_shape(web_ui_with_picker, tmp_path):
    """The picker offers the simulator preset's agents with the kit's shape first; "Default" (no shape)
    is refused; a start with the picker runs the chosen profile without errors."""
    url = web_ui_with_picker
    args = template_args(url)
    assert args["available_user_classes"] == sorted(c.__name__ for c in agent_classes(preset("simulator")))
    assert args["available_shape_classes"][0] == "KitShape"
    refused = httpx.post(
        f"{url}/swarm", data={"shape_class": "Default", "user_count": "1", "spawn_rate": "1"}
    )
    assert not refused.json()["success"] and "KitShape" in refused.json()["message"]
    form = {"shape_class": "KitShape", "user_classes": "ChatAgent", "load_profile": "smoke", "duration": "3s"}
    assert httpx.post(f"{url}/swarm", data=form, timeout=30).json()["success"]
    run_json = tmp_path / "run" / "run.json"
    wait_for(lambda: "stop_reason" in json.loads(run_json.read_text()), 60, "the run's end")
    meta = json.loads(run_json.read_text())
    assert (meta["profile"]["name"], meta["stop_reason"], meta["exit_code"]) == (
        "smoke",
        "profile complete",
        0,
    )


def test_resources_tab_shows_the_sampled_target_before_and_during_load(web_ui):
    wait_for(lambda: "target RSS (MiB)" in _resources(web_ui), 20, "a first sample in the tab")
    rss = float(_resources(web_ui)["target RSS (MiB)"]["now"].replace(",", ""))
    assert 10 < rss < 500  # the simulator's own process, read by the side sampler


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium not installed")
def test_a_real_browser_renders_the_kit_options_in_the_start_form(web_ui):
    dom = subprocess.run(
        [
            *HEADLESS_CHROMIUM,
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
    # above START, what it will run: the dropdown's first profile (manual), with its defaults
    preview = r'id="loadkit-preview"><p><b>START runs</b> profile <b>manual</b>: .*users <b>1</b>'
    assert re.search(preview, rendered)
