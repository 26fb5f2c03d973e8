"""The cockpit beside Locust, in a real headless Chromium driven with ordinary mouse clicks and typing
(DevTools protocol): at 1280, 1600 and 1920 px nothing of the cockpit covers Locust's controls, tabs or
statistics table (bounding boxes, and what is on top at each button's centre), and STOP and RESET take a
plain click; Locust's start form shows what START will run and marks what the last start left in it,
and the command line's thresholds stay in it, previewed and sent, run after run.

Truths: Locust's own statistics (RESET clears them), the run directory (STOP ends the run with its stop
reason; the thresholds typed in the form are the run's).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest

from contract import schema
from tests.browser import chromium_page, running_web_ui
from tests.locust_runs import REPO, wait_for

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("chromium") is None, reason="Chromium not installed (.ci/run installs it)"
    ),
]
ARTIFACTS = REPO / "runs" / "test-artifacts"  # runs/ is git-ignored
THRESHOLD = "ttft_ms p95 < 5000"

# Each named element of Locust's page: its box, and whether a click at its centre reaches it.
_GEOMETRY = """(() => {
  const box = (el) => {
    const r = el.getBoundingClientRect();
    return {x: r.x, y: r.y, w: r.width, h: r.height};
  };
  const button = (label) => [...document.querySelectorAll('header button')]
    .find((b) => b.textContent.trim().toLowerCase() === label);
  const named = {edit: button('edit'), stop: button('stop'), reset: button('reset'),
    tabs: document.querySelector('[role="tablist"]'), table: document.querySelector('#root table')};
  const found = {};
  for (const [name, el] of Object.entries(named)) {
    if (!el) { found[name] = null; continue; }
    const b = box(el);
    const top = document.elementFromPoint(b.x + b.w / 2, b.y + b.h / 2);
    found[name] = {box: b, on_top: el.contains(top)};
  }
  const table = named.table;
  const ticks = [...document.querySelectorAll('#loadkit-cockpit svg')]
    .map((svg) => [...svg.querySelectorAll('text.tick')].map((t) => t.textContent));
  return JSON.stringify({cockpit: box(document.getElementById('loadkit-cockpit')), found, ticks,
    layout: document.body.dataset.loadkitLayout, viewport: window.innerWidth,
    table_cut: table ? table.scrollWidth > table.parentElement.clientWidth + 1 : null});
})()"""


def _overlap(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["w"]
        and b["x"] < a["x"] + a["w"]
        and a["y"] < b["y"] + b["h"]
        and b["y"] < a["y"] + a["h"]
    )


def _centre(page, selector_js: str) -> tuple[float, float]:
    """The element's centre in viewport coordinates, scrolled into view, once a click there reaches it."""
    where = (
        f"(() => {{ const el = {selector_js}; if (!el) return null;"
        " el.scrollIntoView({block: 'center', behavior: 'instant'}); const r = el.getBoundingClientRect();"
        " const x = r.x + r.width / 2, y = r.y + r.height / 2;"
        " return el.contains(document.elementFromPoint(x, y)) ? [x, y] : null; })()"
    )
    found: list = []
    wait_for(lambda: found.append(page.evaluate(where)) or found[-1], 10, f"{selector_js} reachable")
    return found[-1][0], found[-1][1]


def _unfold(page, label: str) -> None:
    """Open one of the form's folded sections and wait until it has finished unfolding (Locust's page
    is Material UI: its Collapse is "entered" then; meanwhile it clips and moves what it holds)."""
    page.click(*_centre(page, _button(label)))
    moving = (
        "document.querySelectorAll('.MuiCollapse-root:not(.MuiCollapse-entered):not(.MuiCollapse-hidden)')"
    )
    page.wait_until(f"{moving}.length === 0", 10, f"{label} unfolded")


def _button(label: str) -> str:
    buttons = "[...document.querySelectorAll('button')]"
    return f"{buttons}.find((b) => b.textContent.trim().toLowerCase() === {label!r})"


def _field(name: str) -> str:
    return f"document.querySelector('form [name=\"{name}\"]')"


def _total(url: str) -> int:
    stats = httpx.get(f"{url}/stats/requests", timeout=10).json()["stats"]
    return next(s["num_requests"] for s in stats if s["name"] == "Aggregated")


def _live(url: str) -> dict:
    return httpx.get(f"{url}/loadkit/live.json", timeout=10).json()["run"]


def _run_json(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / schema.RUN_JSON).read_text())
    except (OSError, ValueError):
        return {}


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    """One web UI session for the module: chat agents against a simulator streaming ~0.4 s replies."""
    base = tmp_path_factory.mktemp("layout")
    sim = ("--sim-args", "--ttft-ms 300 --itl-ms 5")
    with running_web_ui(
        base / "run", "ChatAgent", *sim, "--sample-interval", "0.5", "--stop-timeout", "2"
    ) as url:
        yield url, base


def _started(url: str, start) -> Path:
    """Start a run (`start()`: a POST or a click) and wait until it runs; its run directory."""
    before = _live(url)
    start()
    wait_for(
        lambda: (
            _live(url)["state"] == "running"
            and (_live(url)["id"] != before["id"] or before["state"] == "ready")
        ),
        60,
        "the run going",
    )
    return Path(_live(url)["dir"])


@pytest.mark.parametrize("width", [1280, 1600, 1920])
def test_stop_and_reset_take_an_ordinary_click_and_the_cockpit_covers_nothing_of_locust(ui, width):
    """A manual run at each width: Locust's buttons, tabs and table are clear of the cockpit and on top
    at their centres; the table is whole; RESET clears Locust's statistics; STOP ends the run. At 1920 px
    the cockpit is beside Locust (the layout this guards), at 1280 px below it."""
    url, base = ui
    start = {"load_profile": "manual", "user_count": "2", "spawn_rate": "10"}
    run_dir = _started(url, lambda: httpx.post(f"{url}/swarm", data=start, timeout=30).json()["success"])
    with chromium_page(width) as page:
        page.open(url)
        page.wait_until(
            f"!!({_button('stop')}) && !!document.body.dataset.loadkitLayout", 30, "Locust's STOP"
        )
        page.wait_until("!!document.querySelector('#root table')", 30, "Locust's statistics table")
        geometry = json.loads(page.evaluate(_GEOMETRY))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(ARTIFACTS / f"cockpit-{width}.png")
        assert geometry["viewport"] == width
        for name, found in geometry["found"].items():
            assert found is not None, f"{name}: not on Locust's page"
            assert found["on_top"], f"{name}: something covers its centre at {width} px"
            assert not _overlap(found["box"], geometry["cockpit"]), (
                f"{name} overlaps the cockpit at {width} px"
            )
        assert geometry["table_cut"] is False, f"Locust's table is cut at {width} px"
        assert geometry["layout"] == {1280: "below", 1920: "beside"}.get(width, geometry["layout"])
        # every chart's y axis has distinct round ticks, the flat ones (swap, queue: all 0) too
        assert geometry["ticks"] and all(len(set(t)) == len(t) >= 2 for t in geometry["ticks"]), geometry[
            "ticks"
        ]

        wait_for(lambda: _total(url) >= 6, 60, "a few requests")
        counted = _total(url)
        page.click(*_centre(page, _button("reset")))
        wait_for(lambda: _total(url) < counted, 10, "RESET clearing Locust's statistics")

        page.click(*_centre(page, _button("stop")))
        wait_for(lambda: "stop_reason" in _run_json(run_dir), 60, "STOP ending the run")
    assert _run_json(run_dir)["stop_reason"] == "stopped from the web UI"


def test_the_start_form_shows_what_will_run_and_marks_what_the_last_start_left_in_it(ui):
    """Typed into the form (ordinary clicks and keys): a threshold and a ramp the manual profile does not
    use. The preview above START names the profile, its parameters and the threshold; START runs exactly
    that; after STOP, NEW shows the same form with both values marked as carried from that run; a bad
    value is named before START."""
    url, _ = ui
    wait_for(lambda: _live(url)["state"] in ("ready", "finished"), 120, "no run going")
    with chromium_page(1600) as page:
        page.open(url)
        page.wait_until(f"!!({_button('new')}) || !!({_button('start')})", 30, "Locust's page")
        if page.evaluate(f"!!({_button('new')})"):
            page.click(*_centre(page, _button("new")))
        page.wait_until("!!document.querySelector('#loadkit-preview b')", 30, "the preview in the form")
        _unfold(page, "custom parameters")
        for name, text in (("threshold", THRESHOLD), ("ramp", "10s")):
            page.click(*_centre(page, _field(name)))
            page.type(text)
        page.wait_until(
            f"document.querySelector('#loadkit-preview').textContent.includes({THRESHOLD!r})",
            10,
            "the threshold",
        )
        preview = page.evaluate("document.querySelector('#loadkit-preview').textContent")
        assert "START runs profile manual" in preview and "carried" not in preview, preview

        run_dir = _started(url, lambda: page.click(*_centre(page, _button("start"))))
        page.wait_until(f"!!({_button('stop')})", 30, "Locust's STOP")
        page.click(*_centre(page, _button("stop")))
        wait_for(lambda: "stop_reason" in _run_json(run_dir), 60, "STOP")
        meta = _run_json(run_dir)
        assert [t["expr"] for t in meta["thresholds"]] == [THRESHOLD]

        page.wait_until(f"!!({_button('new')})", 30, "Locust's NEW")
        page.click(*_centre(page, _button("new")))
        page.wait_until(
            "!!document.querySelector('#loadkit-preview .carried-note')", 30, "the carried values"
        )
        carried = page.evaluate(
            "JSON.stringify([...document.querySelectorAll('#loadkit-preview .carried')]"
            ".map((c) => c.dataset.field))"
        )
        note = page.evaluate("document.querySelector('#loadkit-preview .carried-note').textContent")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(ARTIFACTS / "cockpit-start-form.png")
        assert sorted(json.loads(carried)) == ["ramp", "threshold"] and f"run {meta['run_id']}" in note, note

        _unfold(page, "custom parameters")  # the dialog's form starts folded again
        page.click(*_centre(page, _field("peakUsers")))
        page.type("many")
        page.wait_until("!!document.querySelector('#loadkit-preview .error')", 10, "the bad value named")
        error = page.evaluate("document.querySelector('#loadkit-preview .error').textContent")
        assert "--peak-users 'many'" in error, error


COMMAND_LINE = ["ttft_ms p95 < 5000", "latency_ms p95 < 60000"]
_FORM_STATE = """JSON.stringify({
  field: document.querySelector('form [name="threshold"]').value,
  previewed: [...document.querySelectorAll('#loadkit-preview code')].map((c) => c.textContent),
  error: !!document.querySelector('#loadkit-preview .error'),
  carried: !!document.querySelector('#loadkit-preview .carried-note')})"""


def test_the_command_lines_thresholds_stay_shown_previewed_and_sent_run_after_run(tmp_path):
    """Two --threshold flags: the form shows them as one field the preview reads as those two; START runs
    both; NEW shows the same field, unmarked (it is the command line's), and START again, untouched,
    runs both again."""
    flags = [part for expr in COMMAND_LINE for part in ("--threshold", expr)]
    sim = ("--sim-args", "--ttft-ms 50 --itl-ms 5")
    with (
        running_web_ui(tmp_path / "run", "ChatAgent", *sim, *flags, "--stop-timeout", "2") as url,
        chromium_page(1600) as page,
    ):
        page.open(url)
        page.wait_until(f"!!({_button('start')})", 30, "Locust's START")
        for run in ("run", "run-2"):
            page.wait_until("!!document.querySelector('#loadkit-preview b')", 30, "the preview")
            state = json.loads(page.evaluate(_FORM_STATE))
            assert state == {
                "field": "; ".join(COMMAND_LINE),
                "previewed": COMMAND_LINE,
                "error": False,
                "carried": False,
            }, state
            meta = _start_and_stop(page, url)
            assert meta["run_id"] and Path(_live(url)["dir"]) == tmp_path / run
            assert [t["expr"] for t in meta["thresholds"]] == COMMAND_LINE
            page.click(*_centre(page, _button("new")))


def _start_and_stop(page, url: str) -> dict:
    """START and STOP clicked in the page; the run's run.json once it has ended."""
    run_dir = _started(url, lambda: page.click(*_centre(page, _button("start"))))
    page.wait_until(f"!!({_button('stop')})", 30, "Locust's STOP")
    page.click(*_centre(page, _button("stop")))
    wait_for(lambda: "stop_reason" in _run_json(run_dir), 60, "STOP")
    page.wait_until(f"!!({_button('new')})", 30, "Locust's NEW")
    return _run_json(run_dir)


_IN_VIEW = """(() => {
  const stop = [...document.querySelectorAll('header button')]
    .find((b) => b.textContent.trim().toLowerCase() === 'stop');
  const state = document.getElementById('loadkit-status');
  const seen = (el) => { if (!el) return false; const r = el.getBoundingClientRect();
    const x = r.x + r.width / 2, y = r.y + r.height / 2;
    return r.top >= 0 && r.bottom <= window.innerHeight && el.contains(document.elementFromPoint(x, y)); };
  return JSON.stringify({stop: seen(stop), state: seen(state), text: state ? state.textContent : ''});
})()"""


def test_at_1280x800_stop_and_the_run_state_stay_in_view_after_start_and_edit_says_when_it_does_not_apply(ui):
    """START clicked at the bottom of the form, scrolled down to it as a user does at 1280x800: once the
    run goes, Locust's STOP and the kit's status line (run, profile, state) are both in view. Then a
    shaped profile's run: EDIT, posted as Locust's page posts it, is refused with its reason shown in
    the status line (Locust's page shows nothing)."""
    url, _ = ui
    wait_for(lambda: _live(url)["state"] in ("ready", "finished"), 120, "no run going")
    with chromium_page(1280, 800) as page:
        page.open(url)
        page.wait_until(f"!!({_button('new')}) || !!({_button('start')})", 30, "Locust's page")
        if page.evaluate(f"!!({_button('new')})"):
            page.click(*_centre(page, _button("new")))
        page.wait_until("!!document.querySelector('#loadkit-preview b')", 30, "the preview in the form")
        run_dir = _started(url, lambda: page.click(*_centre(page, _button("start"))))
        now = f"loadkit run {_live(url)['id']} · manual · running"
        page.wait_until(f"JSON.parse({_IN_VIEW}).text.includes({now!r})", 30, "the status line")
        seen = json.loads(page.evaluate(_IN_VIEW))
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(ARTIFACTS / "cockpit-1280x800-after-start.png")
        assert seen["stop"] and seen["state"], seen  # both in view, on top
        page.click(*_centre(page, _button("stop")))
        wait_for(lambda: "stop_reason" in _run_json(run_dir), 60, "STOP ending the run")

        shaped = {"load_profile": "average", "peak_users": "2", "duration": "60s", "user_count": "1"}
        shaped_dir = _started(
            url, lambda: httpx.post(f"{url}/swarm", data=shaped, timeout=30).json()["success"]
        )
        page.open(url)  # Locust's page learns of a start made elsewhere when it loads
        page.wait_until(f"!!({_button('stop')})", 30, "Locust's STOP")
        status = "(document.getElementById('loadkit-status')?.textContent || '')"
        page.wait_until(f"{status}.includes('average') && {status}.includes('running')", 30, "running")
        form = "new URLSearchParams({user_count: '5', spawn_rate: '1'})"
        page.evaluate(f"fetch('/swarm', {{method: 'POST', body: {form}}}).then(() => true)")
        page.wait_until("!!document.getElementById('loadkit-notice').textContent", 10, "EDIT's refusal shown")
        shown = page.evaluate("document.getElementById('loadkit-notice').textContent")
        page.screenshot(ARTIFACTS / "cockpit-1280x800-edit-refused.png")
        assert shown.startswith("EDIT does not apply to the average profile"), shown
    httpx.get(f"{url}/stop", timeout=30)
    wait_for(lambda: "stop_reason" in _run_json(shaped_dir), 120, "STOP ending the run")
