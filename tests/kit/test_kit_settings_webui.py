"""The web UI form's values go through the one settings conversion at each start: an empty
--memory-budget is the documented default, a bad one is one error line and no start, never a traceback;
the thresholds a form carries from one start to the next are the ones it shows, previews and runs.

A real `locust -f locustfile.py` web UI process on a loopback port, started through its real /swarm form.
"""

from __future__ import annotations

import json

import httpx
import pytest

from contract import schema
from tests.browser import running_web_ui, template_args
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


def _run_json(run_dir) -> dict:
    try:
        return json.loads((run_dir / schema.RUN_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _profile(run_dir) -> dict:
    return _run_json(run_dir).get("profile", {})


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


COMMAND_LINE = ["ttft_ms p95 < 5000", "latency_ms p95 < 60000"]  # the simulator's replies meet both
TYPED = "tpot_ms p95 < 5000; ttft_ms p99 < 6000"


@pytest.fixture
def web_ui_with_thresholds(tmp_path):
    flags = [part for expr in COMMAND_LINE for part in ("--threshold", expr)]
    with running_web_ui(tmp_path / "run", "ChatAgent", *flags) as url:
        yield url, tmp_path


def _shown(url: str, dest: str) -> str:
    """A field's text in Locust's start form: its template's value (a list would show as its items
    joined by ",", JavaScript's text of an array)."""
    value = template_args(url)["extra_options"][dest]["default_value"]
    return ",".join(value) if isinstance(value, list) else value


def _run(url: str, run_dir, threshold: str) -> list[str]:
    """A smoke run started from the form with this threshold field; the thresholds it judged."""
    _start(url, load_profile="smoke", peak_users="1", duration="1s", threshold=threshold)
    wait_for(lambda: "stop_reason" in _run_json(run_dir), 60, f"{run_dir.name} to end")
    wait_for(lambda: _state(url) == "stopped", 30, "Locust to take the next start")
    return [t["expr"] for t in _run_json(run_dir)["thresholds"]]


def _preview(url: str, threshold: str) -> tuple[str | None, list[str] | None, list[str]]:
    """What the preview says of a form with this threshold field: its error, the thresholds START would
    judge, and the threshold field's text when marked as carried from the last start."""
    form = {"user_count": "1", "spawn_rate": "1", "load_profile": "smoke", "threshold": threshold}
    answer = httpx.post(f"{url}/loadkit/preview", data=form, timeout=10).json()
    carried = [c["value"] for c in answer["carried"] if c["field"] == "threshold"]
    return answer["error"], answer.get("thresholds"), carried


def test_thresholds_the_form_carries_are_shown_and_sent_the_same_run_after_run(web_ui_with_thresholds):
    """The command line's two thresholds: the form shows them as one text that the preview and the start
    read as those two, unmarked after the run; typed ones are marked carried after their run and, sent
    again untouched, judged again. Each start POSTs the field as the form holds it (after a start, Locust's
    form holds the text that start sent)."""
    url, base = web_ui_with_thresholds
    shown = _shown(url, "threshold")
    assert _preview(url, shown) == (None, COMMAND_LINE, [])
    assert _run(url, base / "run", shown) == COMMAND_LINE
    assert _preview(url, shown) == (None, COMMAND_LINE, [])  # the command line's: not carried

    typed = TYPED.split("; ")
    assert _run(url, base / "run-2", TYPED) == typed
    assert _preview(url, TYPED) == (None, typed, [TYPED])
    assert _run(url, base / "run-3", TYPED) == typed
