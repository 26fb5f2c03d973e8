"""The web UI form's values go through the one settings conversion at each start: an empty
--memory-budget is the documented default, a bad one is one error line and no start, never a traceback.

A real `locust -f locustfile.py` web UI process on a loopback port, started through its real /swarm form.
"""

from __future__ import annotations

import json

import httpx
import pytest

from contract import schema
from tests.browser import running_web_ui
from tests.locust_runs import wait_for

pytestmark = pytest.mark.e2e

GIB = 1024**3


@pytest.fixture
def web_ui(tmp_path):
    log = tmp_path / "stderr.txt"
    with log.open("w") as err, running_web_ui(tmp_path / "run", stderr=err) as url:
        yield url, tmp_path / "run", log


def _start(url: str, **fields: str) -> None:
    form = {"user_count": "1", "spawn_rate": "1", "load_profile": "capacity", "max_agents": "2", **fields}
    assert httpx.post(f"{url}/swarm", data=form, timeout=10).status_code == 200


def _state(url: str) -> str:
    return httpx.get(f"{url}/stats/requests", timeout=5).json()["state"]


def _profile(run_dir) -> dict:
    try:
        return json.loads((run_dir / schema.RUN_JSON).read_text(encoding="utf-8")).get("profile", {})
    except (OSError, ValueError):
        return {}


def test_an_empty_memory_budget_from_the_form_is_the_default(web_ui):
    url, run_dir, log = web_ui
    _start(url, memory_budget="", request_timeout="", max_tokens="")
    wait_for(lambda: _profile(run_dir).get("name") == "capacity", 60, "the capacity profile started")
    assert _profile(run_dir)["params"]["memory_budget_bytes"] == GIB
    assert "Traceback" not in log.read_text()


def test_a_bad_memory_budget_from_the_form_is_one_error_line_and_no_start(web_ui):
    url, run_dir, log = web_ui
    _start(url, memory_budget="banana")
    wait_for(lambda: "error:" in log.read_text(), 60, "the error line")
    wait_for(lambda: _state(url) == "stopped", 30, "the refused start to end")
    text = log.read_text()
    errors = [line for line in text.splitlines() if "loadkit: error:" in line]
    assert len(errors) == 1 and "--memory-budget: 'banana' is not a size" in errors[0]
    assert "Traceback" not in text and _profile(run_dir).get("name") is None
