"""Requests never leave the target: a spec path that is a URL (or `//host`) is refused at load with exit 2;
a redirect to another host is a failed row, not followed; an agent's client refuses any request off its
origin, and sends --host's userinfo as Basic auth to that origin only.

Truth: real HTTP servers on two loopback addresses, the target on 127.0.0.1 and another host on
127.0.0.2, each recording every request it receives; the other one must receive nothing.
"""

from __future__ import annotations

import http.server
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from agents.wire.target_origin import HostCredentials, OffTargetError, client_options
from contract import exit_codes, schema
from tests.gateways.harness import rows
from tests.locust_runs import REPO, locust_command

pytestmark = pytest.mark.e2e
OTHER_HOST = "127.0.0.2"  # a second loopback address: another host as far as the kit can tell
SPEC = """
[create]
path = "{path}"
id = "id"
[poll]
path = "/v1/tasks/{{id}}"
status = "status"
terminal = {{ done = ["done"] }}
"""


class Recording(http.server.ThreadingHTTPServer):
    """Answers every request with `answer` (status, headers, body) and keeps (method, path, Authorization)."""

    def __init__(self, address: str, answer: tuple[int, dict[str, str], bytes]) -> None:
        super().__init__((address, 0), _Handler)
        self.answer = answer
        self.seen: list[tuple[str, str, str | None]] = []

    @property
    def url(self) -> str:
        return f"http://{self.server_address[0]}:{self.server_address[1]}"


class _Handler(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        server: Recording = self.server  # type: ignore[assignment]
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server.seen.append((self.command, self.path, self.headers.get("Authorization")))
        status, headers, body = server.answer
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *_args) -> None:
        pass


@contextmanager
def serving(address: str, answer: tuple[int, dict[str, str], bytes]) -> Iterator[Recording]:
    server = Recording(address, answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


OK_JSON = (200, {"Content-Type": "application/json"}, b'{"id": "t1", "status": "done"}')


def spec_run(tmp_path, target: Recording, path: str) -> subprocess.CompletedProcess:
    (tmp_path / "spec.toml").write_text(SPEC.format(path=path))
    args = ["--gateway", f"spec:{tmp_path / 'spec.toml'}", "--host", target.url]
    args += ["--load-profile", "smoke", "--peak-users", "1", "--duration", "2s"]
    return subprocess.run(
        locust_command(tmp_path / "run", *args), cwd=REPO, capture_output=True, text=True, timeout=180
    )


@pytest.mark.parametrize("form", ["http://{other}/v1/tasks", "//{other}/v1/tasks", "HTTP://{other}/x"])
def test_a_spec_path_naming_another_host_is_refused_and_that_host_receives_nothing(tmp_path, form):
    with serving(OTHER_HOST, OK_JSON) as other, serving("127.0.0.1", OK_JSON) as target:
        path = form.format(other=f"{OTHER_HOST}:{other.server_address[1]}")
        done = spec_run(tmp_path, target, path)
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert done.returncode == exit_codes.BAD_INPUT and len(errors) == 1, done.stderr[-2000:]
    assert path in errors[0] and "[create]" in errors[0], errors
    assert other.seen == [] and [r for r in target.seen if r[1] != "/"] == []
    assert not (tmp_path / "run").exists()


def test_a_redirect_to_another_host_is_a_failed_row_and_is_not_followed(tmp_path):
    with serving(OTHER_HOST, OK_JSON) as other:
        away = (307, {"Location": f"{other.url}/v1/tasks"}, b"")
        with serving("127.0.0.1", away) as target:
            done = spec_run(tmp_path, target, "/v1/tasks")
    assert other.seen == [], other.seen
    assert any(method == "POST" for method, _, _ in target.seen), target.seen
    answered = [r for r in rows(tmp_path / "run", schema.REQUESTS_CSV) if r["status_code"]]
    creates = [r for r in answered if r["operation"] == "spec.create"]
    assert creates and all(r["ok"] == "0" and r["error_kind"] == "http_3xx" for r in creates), creates
    assert other.url in creates[0]["error"], done.stderr[-2000:]


def test_the_agents_client_sends_basic_auth_to_its_host_and_nothing_anywhere_else():
    credentials = HostCredentials("loadkit", "pw-on-target-only")
    with serving("127.0.0.1", OK_JSON) as target, serving(OTHER_HOST, OK_JSON) as other:
        with httpx.Client(base_url=target.url, **client_options(target.url, credentials)) as client:
            assert client.get("/v1/tasks").status_code == 200
            with pytest.raises(OffTargetError, match="not on the target"):
                client.get(f"{other.url}/v1/tasks")
            with pytest.raises(OffTargetError):  # the same address on another port is another origin
                client.get("http://127.0.0.1:1/x")
    assert target.seen == [("GET", "/v1/tasks", f"Basic {credentials.basic_token()}")]
    assert other.seen == []
