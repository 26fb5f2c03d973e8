"""The web UI as a cockpit, in one real UI session: a real `locust -f locustfile.py` web UI process on a
free loopback port, driven through Locust's own HTTP API (/swarm, /stop, EDIT = /swarm while running),
what the page shows read from a real headless Chromium (--dump-dom, --screenshot).

Truths: the run directories (users.csv, samples.csv, requests.csv, run.json) against Locust's per-run
stats and what the page draws; the Prometheus text against the JSON.
"""

from __future__ import annotations

import csv
import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from contract import schema
from lifecycle.target import free_port
from tests.browser import HEADLESS_CHROMIUM, answers
from tests.locust_runs import REPO, csv_rows, wait_for

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium")
ARTIFACTS = REPO / "runs" / "test-artifacts"  # runs/ is git-ignored
FAILING = "latency_ms p50 < 1"  # no request is that fast: failing from the first row


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """A web UI session with chat agents against the simulator; its first run directory is `<base>/run`."""
    base = tmp_path_factory.mktemp("cockpit")
    port = free_port()
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "ChatAgent"]
    cmd += ["--web-host", "127.0.0.1", "--web-port", str(port), "--run-dir", str(base / "run")]
    cmd += ["--sample-interval", "0.2", "--sim-args", "--ttft-ms 50 --itl-ms 5"]
    log = open(base / "locust.log", "w")  # closed at teardown
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(url), 60, "the web UI")
        yield url, base
    finally:
        proc.terminate()
        proc.wait(120)
        log.close()


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _post(url: str, path: str, form: dict | None = None) -> dict:
    return httpx.post(f"{url}{path}", data=form or {}, timeout=120).json()


def _last_users(run_dir: Path) -> dict:
    rows = _rows(run_dir / schema.USERS_CSV)
    return rows[-1] if rows else {}


def _rows(path: Path) -> list[dict]:
    try:
        with open(path, newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def _run_json(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / schema.RUN_JSON).read_text())
    except (OSError, ValueError):
        return {}


def _finished(run_dir: Path) -> bool:
    return "stop_reason" in _run_json(run_dir) and (run_dir / schema.REPORT_HTML).exists()


def _locust_total(run_dir: Path) -> int:
    [aggregated] = [r for r in _rows(run_dir / "locust_stats.csv") if r["Name"] == "Aggregated"]
    return int(aggregated["Request Count"])


def _ui_total(url: str) -> int:
    stats = httpx.get(f"{url}/stats/requests", timeout=10).json()["stats"]
    return next(s["num_requests"] for s in stats if s["name"] == "Aggregated")


def _chromium(*args: str) -> str:
    done = subprocess.run(
        [*HEADLESS_CHROMIUM, "--hide-scrollbars", "--virtual-time-budget=6000", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout


def _latest(dom: str, chart: str) -> float:
    found = re.search(rf'data-key="{chart}" data-latest="([^"]*)"', dom)
    assert found, f"no {chart} chart in the page"
    return float(found.group(1))


def _threshold_state(dom: str, expr: str) -> str | None:
    row = re.search(rf'data-expr="{re.escape(html.escape(expr))}".*?class="state state-[^"]*">([^<]*)<', dom)
    return row.group(1) if row else None


def test_manual_run_edit_stop_and_the_page(ui):
    """Run 1, manual: 2 users, EDIT to 5, STOP. users.csv, run.json, the report, Locust's per-run stats,
    the page's users and RSS charts, and the Prometheus text all agree with the files."""
    url, base = ui
    first = base / "run"
    assert _post(url, "/swarm", {"load_profile": "manual", "user_count": "2", "spawn_rate": "10"})["success"]
    wait_for(lambda: _last_users(first).get("users") == "2", 60, "2 users in users.csv")
    edited = _post(url, "/swarm", {"user_count": "5", "spawn_rate": "10"})
    assert edited["success"], edited
    wait_for(lambda: _last_users(first).get("users") == "5", 60, "5 users in users.csv after EDIT")
    wait_for(lambda: csv_rows(first / schema.REQUESTS_CSV) >= 10, 60, "some requests")
    going = httpx.get(f"{url}/loadkit/live.json", timeout=10).json()
    assert going["run"]["params"]["users"] == 5 and going["run"]["edits"] == 1  # the parameters now
    _assert_prometheus_follows_json(url, going)
    scraped = _prometheus(url)["loadkit_requests_total"]  # a running run's scrape
    _post(url, "/stop")  # mid-stream: 5 agents streaming back to back; the stop-timeout lets them finish
    wait_for(lambda: _finished(first), 120, "run.json's stop reason and the report")

    meta = _run_json(first)
    assert meta["stop_reason"] == "stopped from the web UI"
    assert [e["users"] for e in meta["profile"]["edits"]] == [5]
    phases = [p["name"] for p in meta["profile"]["phases"]]
    assert phases[0] == "ramp-up" and any(p.startswith("edit 1:") for p in phases), phases
    targets = [r["target_users"] for r in _rows(first / schema.USERS_CSV)]
    assert targets[0] == "2" and targets[-1] == "5"
    requests = csv_rows(first / schema.REQUESTS_CSV)
    assert requests == _locust_total(first) == _ui_total(url)

    live = httpx.get(f"{url}/loadkit/live.json", timeout=10).json()
    assert live["run"]["id"] == meta["run_id"] and live["run"]["state"] in ("writing the report", "finished")
    assert httpx.get(f"{url}{live['run']['report']}", timeout=10).status_code == 200
    assert "run.json" in httpx.get(f"{url}{live['run']['files']}", timeout=10).text
    assert _prometheus(url) == {
        "loadkit_run_active": 0,
        "loadkit_run_exit_code": meta["exit_code"],
        "loadkit_requests_total": requests,  # the last scrape: every row, those after STOP included
        "loadkit_errors_total": 0,
    }
    assert requests >= scraped  # more when a stream was in flight at STOP (agents think 0.5-1.5 s between)
    assert meta["profile"]["params"]["users"] == 2  # run.json keeps the start's, and the edit

    if CHROMIUM is None:
        pytest.skip("Chromium not installed: the page's charts are not checked")
    dom = _chromium("--dump-dom", url)
    assert meta["run_id"] in dom and "stopped from the web UI" in dom
    assert _latest(dom, "users") == 5
    rss_mib = [float(r["target_rss_bytes"]) / schema.MIB for r in _rows(first / schema.SAMPLES_CSV)]
    assert min(abs(_latest(dom, "memory") - v) for v in rss_mib[-2:]) < 0.001  # within one sample
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _chromium("--window-size=1600,1000", f"--screenshot={ARTIFACTS / 'cockpit.png'}", url)
    assert (ARTIFACTS / "cockpit.png").stat().st_size > 10_000


def _prometheus(url: str) -> dict[str, float]:
    text = httpx.get(f"{url}/loadkit/metrics", timeout=10).text
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples}


def _assert_prometheus_follows_json(url: str, live: dict) -> None:
    """During the run: one series per `latest` value, each labelled with the run id (values move on
    between the two reads, users do not), and loadkit_run_active 1."""
    text = httpx.get(f"{url}/loadkit/metrics", timeout=10).text
    samples = {s.name: s for family in text_string_to_metric_families(text) for s in family.samples}
    assert {f"loadkit_{name}" for name in live["latest"]} <= set(samples)
    assert {s.labels["run_id"] for s in samples.values()} == {live["run"]["id"]}
    assert samples["loadkit_users"].value == live["latest"]["users"] == 5
    assert samples["loadkit_run_active"].value == 1


def test_shaped_run_says_why_edit_does_not_apply_and_a_failing_threshold_shows_then_aborts(ui):
    """Run 2, smoke with a threshold that fails at once: EDIT refused with the reason, "failing" in
    the page before the abort, then the abort ends it with exit code 99 in its own directory."""
    url, base = ui
    second = base / "run-2"
    form = {
        "load_profile": "smoke",
        "peak_users": "3",
        "duration": "60s",
        "threshold": f"{FAILING} abort grace=30s",
    }
    assert _post(url, "/swarm", form | {"user_count": "1", "spawn_rate": "1"})["success"]
    wait_for(lambda: csv_rows(second / schema.REQUESTS_CSV) >= 3, 60, "requests of the second run")
    refused = _post(url, "/swarm", {"user_count": "9", "spawn_rate": "9"})
    assert not refused["success"] and "does not apply to the smoke profile" in refused["message"]
    live = lambda: httpx.get(f"{url}/loadkit/live.json", timeout=10).json()  # noqa: E731
    wait_for(lambda: [t["state"] for t in live()["thresholds"]] == ["failing"], 30, "failing in the JSON")
    if CHROMIUM is not None:
        assert _threshold_state(_chromium("--dump-dom", url), FAILING) == "failing"
    assert not _finished(second), "aborted before the page was read: make the grace longer"
    wait_for(lambda: _finished(second), 120, "the abort")
    meta = _run_json(second)
    assert meta["profile"]["name"] == "smoke" and meta["stop_reason"].startswith("threshold failed")
    assert meta["stop_reason"].endswith(" ms)")  # the value it failed on, in ms: "(value 52.3 ms)"
    [shown] = live()["thresholds"]
    assert shown["shown_limit"] == "1 ms" and shown["shown_value"].endswith(" ms"), shown
    assert meta["exit_code"] == 99
    assert [t["state"] for t in live()["thresholds"]] == ["aborted"]
    assert csv_rows(second / schema.REQUESTS_CSV) == _locust_total(second) == _ui_total(url)
    assert _run_json(base / "run")["profile"]["name"] == "manual"  # the first run is untouched


def test_bad_form_values_end_that_run_with_exit_2_and_a_following_start_runs_normally(ui):
    """Run 3: a malformed profile value ends the run at once with its reason; run 4, the form without
    the threshold: the smoke profile runs its whole duration."""
    url, base = ui
    bad, good = base / "run-3", base / "run-4"
    form = {"load_profile": "smoke", "peak_users": "many", "user_count": "1", "spawn_rate": "1"}
    assert _post(url, "/swarm", form)["success"]  # Locust's answer; the run then stops with the reason
    wait_for(lambda: _finished(bad), 60, "the malformed run's end")
    meta = _run_json(bad)
    assert meta["stop_reason"].startswith("bad input: --peak-users 'many'") and meta["exit_code"] == 2
    form = {"load_profile": "smoke", "peak_users": "2", "duration": "5s", "threshold": ""}
    assert _post(url, "/swarm", form | {"user_count": "1", "spawn_rate": "1"})["success"]
    wait_for(lambda: _finished(good), 120, "the fourth run's end")
    meta = _run_json(good)
    assert meta["stop_reason"] == "profile complete" and meta["exit_code"] == 0
    assert meta["end_ts"] - meta["start_ts"] >= 4.5
    assert meta["thresholds"] == []
    assert csv_rows(good / schema.REQUESTS_CSV) == _locust_total(good) > 0
