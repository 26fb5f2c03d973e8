"""Headless Chromium and a Locust web UI for the browser tests: one set of flags, one launcher, and a
page driven over the DevTools protocol (real mouse clicks and typing, bounding boxes, screenshots).
Shared by the tests; not a test module itself."""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import websocket

from lifecycle.target import free_port
from tests.locust_runs import REPO, wait_for

# quiet, offline, headless: no first-run dialogs, no background fetches
HEADLESS_CHROMIUM = [
    "chromium",
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def template_args(url: str) -> dict:
    """What Locust's page is built from (its `window.templateArgs`): the start form's fields and values."""
    page = httpx.get(url, timeout=10).text
    args, _ = json.JSONDecoder().raw_decode(page.split("window.templateArgs = ", 1)[1])
    return args


def web_ui_command(run_dir: Path, port: int, *extra: str) -> list[str]:
    """`locust -f locustfile.py` with its web UI on 127.0.0.1:port."""
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--web-host", "127.0.0.1"]
    return cmd + ["--web-port", str(port), "--run-dir", str(run_dir), *extra]


@contextmanager
def running_web_ui(
    run_dir: Path, *extra: str, stderr=subprocess.DEVNULL, ready_s: float = 60
) -> Iterator[str]:
    """`locust -f locustfile.py` with its web UI on a free loopback port; killed if SIGTERM is ignored."""
    port = free_port()
    proc = subprocess.Popen(
        web_ui_command(run_dir, port, *extra), cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(url), ready_s, "the web UI")
        yield url
    finally:
        terminate(proc)


def terminate(proc: subprocess.Popen, timeout_s: float = 15) -> None:
    """SIGTERM (the kit ends its run and quits), then SIGKILL if it is ignored."""
    proc.terminate()
    try:
        proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout_s)


class Page:
    """One tab of a headless Chromium, driven over its DevTools WebSocket."""

    def __init__(self, socket: websocket.WebSocket) -> None:
        self.socket = socket
        self.ids = itertools.count(1)

    def call(self, method: str, **params) -> dict:
        """A DevTools command; its result (events that arrive meanwhile are dropped)."""
        sent = next(self.ids)
        self.socket.send(json.dumps({"id": sent, "method": method, "params": params}))
        while True:
            answer = json.loads(self.socket.recv())
            if answer.get("id") == sent:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer["result"]

    def evaluate(self, expression: str):
        """A JavaScript expression's value in the page (promises awaited)."""
        found = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in found:
            raise RuntimeError(f"{expression[:80]}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def wait_until(self, expression: str, timeout: float, what: str) -> None:
        """Until the expression is truthy in the page."""
        wait_for(lambda: self.evaluate(expression), timeout, what)

    def click(self, x: float, y: float) -> None:
        """An ordinary left click at viewport point (x, y): whatever is on top there receives it."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    def type(self, text: str) -> None:
        """Text typed into the focused field, as a keyboard would."""
        self.call("Input.insertText", text=text)

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))


@contextmanager
def chromium_page(width: int, height: int = 1000) -> Iterator[Page]:
    """A headless Chromium with one blank tab of that window size; stopped, and its profile removed, after."""
    profile = Path(tempfile.mkdtemp(prefix="loadkit-chromium-"))
    proc = subprocess.Popen(
        [
            *HEADLESS_CHROMIUM,
            "--remote-debugging-port=0",  # Chromium picks a free port and writes it into the profile
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "--hide-scrollbars",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    port_file = profile / "DevToolsActivePort"
    try:
        wait_for(lambda: port_file.exists() and port_file.read_text().strip(), 30, "Chromium's port")
        port = port_file.read_text().split()[0]
        [tab] = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list").json() if t["type"] == "page"]
        socket = websocket.create_connection(tab["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        try:
            yield Page(socket)
        finally:
            socket.close()
    finally:
        terminate(proc)
        wait_for(
            lambda: _removed(profile), 10, "Chromium's profile removed"
        )  # its helpers write a moment longer


def _removed(directory: Path) -> bool:
    shutil.rmtree(directory, ignore_errors=True)
    return not directory.exists()
