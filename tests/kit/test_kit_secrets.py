"""Secrets: secret-looking values in command lines are masked in run.json; the configured API key's value
never reaches a file, a line or a report, even when the gateway echoes it; the web UI binds 127.0.0.1.

Unit tests of the one redaction module, then real runs: an echoing gateway (a real HTTP server on
127.0.0.1), a kit-started target with secrets on its command line, and a real web UI process.
"""

from __future__ import annotations

import http.server
import json
import logging
import os
import subprocess
import sys
import threading

import psutil
import pytest

from agents.wire.target_origin import HostCredentials, split_userinfo, with_userinfo
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


def test_a_urls_userinfo_is_masked_in_text_and_in_command_lines():
    assert redact.redact("GET http://alice:pw@ss@10.0.0.1:8/x, https://tok@h/ ok") == (
        "GET http://***@10.0.0.1:8/x, https://***@h/ ok"
    )
    assert redact.redact("mail alice@example.org, http://h/a@b") == "mail alice@example.org, http://h/a@b"
    words = ["locust", "--host", "http://u:pw@h:1", "--queue-url=https://u:pw@h/q"]
    assert redact.redact_args(words) == ["locust", "--host", "http://***@h:1", "--queue-url=https://***@h/q"]


def test_a_script_given_as_one_word_is_masked_inside_and_kept_as_written_otherwise():
    shell = ["sh", "-c", "cd /srv && API_TOKEN=X7 gw --api-key X8 --port 9"]
    assert redact.redact_args(shell) == [
        "sh",
        "-c",
        "cd /srv '&&' 'API_TOKEN=***' gw --api-key '***' --port 9",
    ]
    assert redact.redact_args(["sh", "-c", "API_TOKEN='a b' gw"]) == [
        "sh",
        "-c",
        "API_TOKEN=***",
    ]  # all of it
    code = ["python", "-c", "import time; time.sleep(60)", "--target-cmd=gw --token X9"]
    assert redact.redact_args(code) == [*code[:3], "--target-cmd=gw --token '***'"]


def test_log_lines_are_masked(caplog):
    log = logging.getLogger("loadkit-test-redact")
    log.addFilter(redact.LOG_FILTER)
    log.warning("sampler service %s answers again", "http://u:pw-42@h:1")
    assert "pw-42" not in caplog.text and "http://***@h:1" in caplog.text


def test_host_userinfo_is_split_off_and_put_back_percent_encoded():
    bare, auth = split_userinfo("http://al%40ice:p%3Aw@ss@127.0.0.1:80/x")
    assert bare == "http://127.0.0.1:80/x" and auth == HostCredentials("al@ice", "p:w@ss")
    assert "p:w@ss" not in repr(auth)
    assert with_userinfo(bare, auth) == "http://al%40ice:p%3Aw%40ss@127.0.0.1:80/x"
    assert split_userinfo("http://127.0.0.1:80") == ("http://127.0.0.1:80", None)


def test_a_registered_secret_is_masked_in_text_and_in_every_csv_cell(tmp_path):
    redact.add_secret("abc")  # too short to mask safely: ignored
    redact.add_secret("registered-secret-42")
    assert redact.redact("x registered-secret-42 abc") == "x *** abc"
    appender = CsvAppender(tmp_path / "t.csv", ("error",))
    appender.write({"error": "echo: registered-secret-42"})
    appender.close()
    assert "registered-secret-42" not in (tmp_path / "t.csv").read_text()


def kit(run_dir, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`locust -f locustfile.py --headless --run-dir RUN_DIR ARGS...` as a user runs it."""
    command = locust_command(run_dir, *args)
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=180, env=env)


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
    done = kit(run_dir, *args, env={**os.environ, "LOADKIT_ECHO_KEY": SECRET})
    gateway.shutdown()
    assert done.returncode == 1, done.stderr[-1500:]  # every request failed: Locust's own code
    assert "denied: Bearer ***" in (run_dir / schema.REQUESTS_CSV).read_text()  # the echo, masked
    leaks = [p.name for p in run_dir.iterdir() if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == [] and SECRET not in done.stdout + done.stderr


def _web_ui(tmp_path, env: dict[str, str]):
    port = free_port()
    cmd = [sys.executable, "-m", "locust", "-f", str(REPO / "locustfile.py"), "--web-port", str(port)]
    cmd += ["--run-dir", str(tmp_path / "run")]
    err = (tmp_path / "stderr.txt").open("w")
    return port, subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, **env}
    )


def _listening(pid: int, port: int) -> set[str]:
    """The addresses the web UI's process (or one of its children) listens on at `port`; a child that
    ends while it is read (the kit's short-lived helpers) listens on nothing."""
    found = set()
    for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
        try:
            connections = proc.net_connections("inet")
        except psutil.NoSuchProcess:
            if proc.pid == pid:
                raise
            continue
        found |= {c.laddr.ip for c in connections if c.status == "LISTEN" and c.laddr.port == port}
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


CANARY = "canary-pw-5f3e9a"


def _leaks(run_dir, needles: tuple[str, ...]) -> list[str]:
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    return [f"{p.name}: {n}" for p in files for n in needles if n.encode() in p.read_bytes()]


@pytest.mark.e2e
def test_a_password_in_host_is_sent_as_basic_auth_and_written_nowhere(tmp_path):
    """The echo gateway answers every POST with the Authorization header it got: the kit sent --host's
    userinfo as Basic auth, and neither the password nor its Basic encoding is in any file of the run
    (run.json, CSVs, report.md/html, locust_report.html) or in the output."""
    gateway = EchoGateway()
    threading.Thread(target=gateway.serve_forever, daemon=True).start()
    port = gateway.server_address[1]
    run_dir = tmp_path / "run"
    host = f"http://loadkit:{CANARY}@127.0.0.1:{port}"
    args = ["ChatAgent", "--host", host, "--load-profile", "smoke", "--peak-users", "1", "--duration", "2s"]
    args += ["--queue-url", f"http://q:{CANARY}@127.0.0.1:{port}/queue", "--queue-field", "queue_length"]
    done = kit(run_dir, *args)
    gateway.shutdown()
    assert done.returncode == 1, done.stderr[-1500:]  # every request failed (500): Locust's own code
    basic = HostCredentials("loadkit", CANARY).basic_token()
    assert "denied: Basic ***" in (run_dir / schema.REQUESTS_CSV).read_text()
    assert {p.name for p in run_dir.iterdir()} >= {schema.RUN_JSON, schema.LOCUST_HTML, schema.REPORT_HTML}
    assert _leaks(run_dir, (CANARY, basic)) == []
    assert CANARY not in done.stdout + done.stderr and basic not in done.stdout + done.stderr
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    assert meta["target"]["url"] == f"http://127.0.0.1:{port}"
    assert f"http://***@127.0.0.1:{port}" in meta["command"]


@pytest.mark.e2e
@pytest.mark.parametrize(
    "args",
    [
        ("--host", f"http://u:{CANARY}@127.0.0.1:9"),  # nothing answers
        ("--host", f"http://u:{CANARY}@127.0.0.1:99999"),  # no such port
        ("--sampler-url", f"http://u:{CANARY}@127.0.0.1:9"),
    ],
)
def test_a_password_in_a_url_is_masked_in_the_error_line(tmp_path, args):
    env = {**os.environ, "LOADKIT_SAMPLER_TOKEN": "sampler-token-0123456789"}
    done = kit(tmp_path / "run", *args, env=env)
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert done.returncode == 2 and len(errors) == 1, done.stderr[-1500:]
    assert "127.0.0.1" in errors[0] and "u:" not in errors[0] and CANARY not in done.stderr


@pytest.mark.e2e
def test_secrets_on_the_target_command_line_are_masked_in_run_json_and_processes_csv(tmp_path):
    """run.json records the target's command as given; the sampler's process log records the target
    process's own command line: both masked by the one rule."""
    run_dir = tmp_path / "run"
    code = 'import runpy, sys; sys.argv[1:] = ["--port", "{port}"]; '
    code += 'runpy.run_module("simgateway", run_name="__main__")'
    target = f"{sys.executable} -c '{code}' --api-key sk-{CANARY} API_TOKEN=tok-{CANARY}"
    done = kit(run_dir, "ChatAgent", "--target-cmd", target, "--load-profile", "smoke", "--duration", "1s")
    assert done.returncode == 0, done.stderr[-1500:]
    meta = json.loads((run_dir / schema.RUN_JSON).read_text())
    assert meta["target"]["command"][-3:] == ["--api-key", "***", "API_TOKEN=***"], meta["target"]
    assert any("API_TOKEN=***" in word for word in meta["command"]), meta["command"]
    processes = (run_dir / schema.PROCESSES_CSV).read_text()
    assert "--api-key *** API_TOKEN=***" in processes and "runpy.run_module" in processes, processes
    assert _leaks(run_dir, (CANARY,)) == [] and CANARY not in done.stdout + done.stderr
