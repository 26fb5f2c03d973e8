"""Secrets: secret-looking values in command lines are masked in run.json; the configured API key's value
never reaches a file, a line or a report, even when the gateway echoes it; the web UI binds 127.0.0.1.

Unit tests of the one redaction module, then real runs: an echoing gateway (a real HTTP server on
127.0.0.1), a kit-started target with secrets on its command line, and a real web UI process.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading

import psutil
import pytest

from contract import redact, schema
from contract.csv_append import CsvAppender
from lifecycle.target import free_port
from tests.browser import terminate
from tests.locust_runs import REPO, locust_command, wait_for

SECRET = "sk-loadkit-echo-0123456789"


@pytest.mark.parametrize(
    "words, expected",
    [
        (["--api-key", "X1"], ["--api-key", "***"]),
        (["--token=X2", "--port", "80"], ["--token=***", "--port", "80"]),
        (
            ["env", "API_TOKEN=X3", "OPENAI_API_KEY=X4", "run"],
            ["env", "API_TOKEN=***", "OPENAI_API_KEY=***", "run"],
        ),
        (["--password", "X5", "--secret=X6"], ["--password", "***", "--secret=***"]),
        (["--max-tokens", "64", "--output-tokens=5"], ["--max-tokens", "64", "--output-tokens=5"]),
        (["--api-key-env", "MY_KEY"], ["--api-key-env", "MY_KEY"]),
        (["--author", "me", "--monkey", "2"], ["--author", "me", "--monkey", "2"]),
    ],
)
def test_secret_looking_arguments_are_masked(words, expected):
    assert redact.redact_args(words) == expected


def test_a_command_string_is_masked_word_by_word():
    assert (
        redact.redact_command("gw --port {port} --auth-token 's p'")
        == "gw --port '{port}' --auth-token '***'"
    )
    assert redact.redact_command("unbalanced 'quote") == redact.MASK


def test_a_registered_secret_is_masked_in_text_and_in_every_csv_cell(tmp_path):
    redact.add_secret("abc")  # too short to mask safely: ignored
    redact.add_secret("registered-secret-42")
    assert redact.redact("x registered-secret-42 abc") == "x *** abc"
    appender = CsvAppender(tmp_path / "t.csv", ("error",))
    appender.write({"error": "echo: registered-secret-42"})
    appender.close()
    assert "registered-secret-42" not in (tmp_path / "t.csv").read_text()


class EchoGateway(http.server.ThreadingHTTPServer):
    """Answers health checks; every other request gets a 500 whose body echoes the Authorization header."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Echo)


class _Echo(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self._send(200, b"{}")

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(500, f"denied: {self.headers.get('Authorization')}".encode())

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args) -> None:
        pass


@pytest.mark.e2e
def test_an_api_key_echoed_by_the_gateway_reaches_no_file_line_or_report(tmp_path):
    gateway = EchoGateway()
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    run_dir = tmp_path / "run"
    args = ["ChatAgent", "--host", f"http://127.0.0.1:{gateway.server_address[1]}", "--api-key-env"]
    args += ["LOADKIT_ECHO_KEY", "--load-profile", "smoke", "--peak-users", "1", "--duration", "2s"]
    done = subprocess.run(
        locust_command(run_dir, *args),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "LOADKIT_ECHO_KEY": SECRET},
    )
    gateway.shutdown()
    assert done.returncode == 1, done.stderr[-1500:]  # every request failed: Locust's own code
    assert "denied: Bearer ***" in (run_dir / schema.REQUESTS_CSV).read_text()  # the echo, masked
    leaks = [p.name for p in run_dir.iterdir() if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == [] and SECRET not in done.stdout + done.stderr


@pytest.mark.e2e
def test_secrets_on_the_target_command_line_are_masked_in_run_json(tmp_path):
    run_dir = tmp_path / "run"
    target = f"env API_TOKEN=tok-{SECRET} {sys.executable} -m simgateway --port {{port}} --ttft-ms 5"
    done = subprocess.run(
        locust_command(
            run_dir, "ChatAgent", "--target-cmd", target, "--load-profile", "smoke", "--duration", "1s"
        ),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-1500:]
    text = (run_dir / schema.RUN_JSON).read_text()
    assert SECRET not in text
    meta = json.loads(text)
    assert "API_TOKEN=***" in meta["target"]["command"]
    assert any("API_TOKEN=***" in word for word in meta["command"])


def _web_ui(tmp_path, env: dict[str, str]):
    port = free_port()
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--web-port", str(port)]
    cmd += ["--run-dir", str(tmp_path / "run")]
    err = (tmp_path / "stderr.txt").open("w")
    return port, subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, **env}
    )


def _listening(pid: int, port: int) -> set[str]:
    found = set()
    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        found |= {
            c.laddr.ip for c in proc.net_connections("inet") if c.status == "LISTEN" and c.laddr.port == port
        }
    return found


@pytest.mark.e2e
@pytest.mark.parametrize(
    "env, bound, warned",
    [({}, {"127.0.0.1"}, False), ({"LOCUST_WEB_HOST": "0.0.0.0"}, {"0.0.0.0"}, True)],
)
def test_the_web_ui_binds_loopback_unless_told_and_warns_when_exposed(tmp_path, env, bound, warned):
    port, proc = _web_ui(tmp_path, env)
    try:
        wait_for(lambda: _listening(proc.pid, port), 60, "the web UI listening")
        assert _listening(proc.pid, port) == bound
        assert ("reachable from other machines" in (tmp_path / "stderr.txt").read_text()) is warned
    finally:
        terminate(proc)
