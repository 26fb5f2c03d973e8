"""The Grafana dashboard (dashboards/loadkit.json) against a real Prometheus (Debian's `prometheus`)
scraping a real web UI run every second: every panel's PromQL, run through Prometheus's HTTP API as
Grafana would send it, returns at least one series over the run; `loadkit_run_active` goes 1 -> 0; the
run's other series end with it. Grafana itself does not run: the dashboard is parsed as Grafana imports it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from kit.prometheus import FAMILIES, PREFIX
from lifecycle.target import free_port
from tests.browser import running_web_ui, terminate
from tests.locust_runs import REPO, wait_for

PROMETHEUS = shutil.which("prometheus")
NO_PROMETHEUS = "prometheus not installed (Debian's package: .ci/run installs it)"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        PROMETHEUS is None, reason="prometheus not installed (Debian's package; .ci/run installs it)"
    ),
]
DASHBOARD = REPO / "dashboards" / "loadkit.json"
SCRAPE_S = 1
# Grafana's interval macros as it fills them in for a short time range (at least 4 scrapes for a rate)
MACROS = {"$__rate_interval": f"{4 * SCRAPE_S}s", "$__interval": f"{SCRAPE_S}s"}
# a series the dashboard shows before the live data has it: its panel is checked once kit.prometheus knows it
# (then this run needs an --slo too)
AWAITED = {
    name: why
    for name, why in {"loadkit_goodput": "goodput (--slo)"}.items()
    if name.removeprefix(PREFIX) not in FAMILIES
}


def _dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def _panels(dashboard: dict) -> list[dict]:
    """Every panel with queries, those inside rows included."""
    found = []
    for panel in dashboard["panels"]:
        found += [panel] if panel.get("targets") else []
        found += [p for p in panel.get("panels", []) if p.get("targets")]
    return found


def _promql(expr: str, run_id: str) -> str:
    """The query as Grafana sends it for one selected run (regex characters escaped as Grafana does for
    a multi-value variable: a backslash, doubled inside the PromQL string)."""
    expr = expr.replace("$run_id", re.sub(r"([\\^$*+?.()|\[\]{}])", r"\\\\\1", run_id))
    for macro, value in MACROS.items():
        expr = expr.replace(macro, value)
    return expr


def _metrics(expr: str) -> set[str]:
    return set(re.findall(rf"\b{PREFIX}[a-z0-9_]+", expr))


def test_the_dashboard_imports_as_is_and_asks_only_for_what_the_kit_exports():
    """Grafana's import needs a title, panels with unique ids and datasources it can resolve (here a
    datasource variable) and the run selector; every metric a panel asks for is one the kit documents."""
    dashboard = _dashboard()
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["ds"]["type"] == "datasource" and variables["ds"]["query"] == "prometheus"
    assert variables["run_id"]["definition"] == "label_values(loadkit_run_active, run_id)"
    panels = _panels(dashboard)
    assert len({p["id"] for p in panels}) == len(panels) and dashboard["uid"] and dashboard["title"]
    asked = {name for p in panels for t in p["targets"] for name in _metrics(t["expr"])}
    exported = {PREFIX + name for name in FAMILIES}
    assert asked - exported <= set(AWAITED), asked - exported
    assert all('run_id=~"$run_id"' in t["expr"] for p in panels for t in p["targets"])
    documented = (REPO / "docs" / "webui.md").read_text()
    assert [name for name in sorted(exported) if f"`{name}`" not in documented] == []


@contextmanager
def _prometheus(tmp_path: Path, target: str) -> Iterator[str]:
    """Prometheus scraping the web UI's /loadkit/metrics every second, its data in tmp_path; stopped after."""
    config = tmp_path / "prometheus.yml"
    config.write_text(
        json.dumps(  # JSON is YAML
            {
                "global": {"scrape_interval": f"{SCRAPE_S}s", "evaluation_interval": f"{SCRAPE_S}s"},
                "scrape_configs": [
                    {
                        "job_name": "loadkit",
                        "metrics_path": "/loadkit/metrics",
                        "static_configs": [{"targets": [target]}],
                    }
                ],
            }
        )
    )
    port, log = free_port(), tmp_path / "prometheus.log"
    with open(log, "w") as stderr:
        proc = subprocess.Popen(
            [
                str(PROMETHEUS),
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=1h",
            ],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url) or proc.poll() is not None, 60, "Prometheus ready")
        assert proc.poll() is None, log.read_text()[-2000:]
        yield url
    finally:
        terminate(proc)


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/-/ready", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _query(prometheus: str, expr: str) -> list[dict]:
    answer = httpx.get(f"{prometheus}/api/v1/query", params={"query": expr}, timeout=10).json()
    assert answer["status"] == "success", (expr, answer)
    return answer["data"]["result"]


def _query_range(prometheus: str, expr: str, start: float, end: float) -> list[dict]:
    params = {"query": expr, "start": start, "end": end, "step": f"{SCRAPE_S}s"}
    answer = httpx.get(f"{prometheus}/api/v1/query_range", params=params, timeout=10).json()
    assert answer["status"] == "success", (expr, answer)
    return answer["data"]["result"]


@pytest.mark.e2e
@pytest.mark.skipif(PROMETHEUS is None, reason=NO_PROMETHEUS)
def test_every_panel_returns_data_over_a_real_run_and_run_active_goes_1_then_0(tmp_path):
    """A 6 s smoke run of chat agents (10 % of them failing, a threshold, PSS sampled) scraped every
    second; afterwards each panel's queries over the run's span, as Grafana would ask them."""
    sim = ("--sim-args", "--ttft-ms 50 --itl-ms 5 --error-rate 0.1")
    ui = ("ChatAgent", *sim, "--sample-interval", "0.5", "--pss-every", "1", "--stop-timeout", "2")
    with (
        running_web_ui(tmp_path / "run", *ui) as url,
        _prometheus(tmp_path, url.removeprefix("http://")) as prom,
    ):
        wait_for(lambda: _query(prom, 'up{job="loadkit"} == 1'), 30, "Prometheus scraping the web UI")
        run_id = httpx.get(f"{url}/loadkit/live.json", timeout=10).json()["run"]["id"]
        active = f'loadkit_run_active{{run_id="{run_id}"}}'
        wait_for(lambda: _query(prom, active), 30, "the run's first scrape")
        start = time.time()
        form = {
            "load_profile": "smoke",
            "peak_users": "3",
            "duration": "6s",
            "threshold": "ttft_ms p95 < 10s",
            "slo": "ttft_ms <= 10s",  # the goodput panel's series
        }
        assert httpx.post(
            f"{url}/swarm", data=form | {"user_count": "1", "spawn_rate": "1"}, timeout=30
        ).json()["success"]
        wait_for(lambda: [s["value"][1] for s in _query(prom, active)] == ["1"], 30, "loadkit_run_active 1")
        ended = lambda: [s["value"][1] for s in _query(prom, active)] == ["0"]  # noqa: E731
        wait_for(ended, 60, "loadkit_run_active 0 after the run")
        end = time.time() + SCRAPE_S  # the range's last step falls after the scrape that saw the end
        exported = httpx.get(f"{url}/loadkit/metrics", timeout=10).text
        wait_for(
            lambda: not _query(prom, f'loadkit_users{{run_id="{run_id}"}}'), 10, "the run's series ended"
        )

        values = [v for s in _query_range(prom, active, start - 2, end) for _, v in s["values"]]
        assert "1" in values and "0" in values[values.index("1") :], values  # 0 before, 1 during, 0 after
        assert "loadkit_run_exit_code" in exported and "loadkit_users" not in exported, exported
        empty, awaited = [], []
        for panel in _panels(_dashboard()):
            exprs = [_promql(t["expr"], run_id) for t in panel["targets"]]
            if any(_query_range(prom, expr, start, end) for expr in exprs):
                continue
            names = {name for expr in exprs for name in _metrics(expr)}
            (awaited if names <= set(AWAITED) else empty).append(panel["title"])
        assert empty == [], f"panels with no series over the run: {empty}"
        for title in awaited:
            warnings.warn(
                f"panel {title!r} not checked: it awaits {', '.join(AWAITED.values())}", stacklevel=1
            )
        options = httpx.get(
            f"{prom}/api/v1/label/run_id/values", params={"match[]": "loadkit_run_active"}, timeout=10
        ).json()["data"]
        assert run_id in options  # the dashboard's run selector
