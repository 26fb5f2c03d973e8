"""Each profile's report.html, rendered by headless Chromium at 1280 px: no horizontal scroll (the page
measures its own scroll width), and a screenshot saved as a test artifact under the test's tmp dir."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from analysis.report import write_report
from tests.browser import HEADLESS_CHROMIUM
from tests.report_runs import PROFILES, recorded_run

WIDTH = 1280
CHROMIUM = [
    *HEADLESS_CHROMIUM,
    "--hide-scrollbars",
    f"--window-size={WIDTH},2400",
]
MEASURE = (
    "<script>document.body.setAttribute('data-scroll-width', document.documentElement.scrollWidth)</script>"
)

pytestmark = [
    pytest.mark.skipif(shutil.which("chromium") is None, reason="Chromium not installed"),
    pytest.mark.e2e,
]


def scroll_width(page: Path) -> int:
    """The document's scroll width as Chromium lays the page out in a 1280 px wide window."""
    probe = page.with_name(page.stem + "-measured.html")
    probe.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run(
        [*CHROMIUM, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    found = re.search(r'data-scroll-width="(\d+)"', dom)
    assert found, dom[-500:]
    return int(found.group(1))


def screenshot(page: Path, out: Path) -> Path:
    subprocess.run([*CHROMIUM, f"--screenshot={out}", page.as_uri()], capture_output=True, timeout=120)
    return out


def test_the_measure_sees_a_page_wider_than_the_window(tmp_path):
    page = tmp_path / "wide.html"
    page.write_text("<!doctype html><html><body><div style='width:3000px'>x</div></body></html>")
    assert scroll_width(page) > WIDTH


@pytest.mark.parametrize("profile", PROFILES)
def test_report_fits_1280_px_and_is_screenshotted(tmp_path, profile):
    page = write_report(recorded_run(tmp_path / profile, profile))
    assert scroll_width(page) <= WIDTH
    shot = screenshot(page, tmp_path / f"report-{profile}.png")
    assert shot.stat().st_size > 10_000  # a rendered page, not an empty image
