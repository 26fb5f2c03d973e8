"""The web UI form's values go through the one settings conversion at each start: an empty
--memory-budget is the documented default, a bad one is one error line and no start, never a traceback.

A real `locust -f locustfile.py` web UI process on a loopback port, started through its real /swarm form.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from contract import schema
from lifecycle.target import free_port
from tests.locust_runs import REPO, wait_for

GIB = 1024**3


@pytest.fixture
def web_ui(tmp_path):
    port = free_port()
    log = tmp_path / "stderr.txt"
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
    ]
    with log.open("w") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url), 60, "the web UI")
        yield url, tmp_path / "run", log
    finally:
        proc.terminate()  # a running shape ignores SIGTERM in Locust 2.47 (issue 10): then SIGKILL
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


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
