"""Test harness for agent classes: start a real server on a free loopback port, build a Locust user with
kit options, and read back the rows it recorded. Every process started here is stopped by its caller's
fixture (process group, SIGTERM then SIGKILL); nothing here asserts.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest
from locust.env import Environment

from agents.presets import preset
from agents.run_context import new_context
from agents.settings import AgentSettings
from kit.rows import RowRecorder
from lifecycle.target import Target, TargetError, free_port, stop_target, wait_healthy

RUN_ID = "gwtest-run"


@contextmanager
def running_server(
    command: list[str],
    health_path: str,
    port: int,
    timeout_s: float = 30.0,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[str]:
    """Start `command` (which must listen on `port`; `env`: its whole environment, else ours), yield its
    URL once healthy, always stop it."""
    log = tempfile.TemporaryFile()
    popen = subprocess.Popen(
        command, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env, start_new_session=True
    )
    target = Target(url=f"http://127.0.0.1:{port}", pid=popen.pid, command=command, popen=popen)
    try:
        try:
            wait_healthy(target.url + health_path, timeout_s, target, log)
        except TargetError as exc:
            log.seek(0)
            raise TargetError(f"{exc}\n{log.read().decode(errors='replace')[-2000:]}") from exc
        yield target.url
    finally:
        stop_target(target, timeout_s=5.0)


@contextmanager
def agent_user(user_class, host: str, run_dir: Path, **options) -> Iterator:
    """A started user of `user_class` with kit options; on exit it is stopped and its rows are flushed."""
    run_dir.mkdir(parents=True, exist_ok=True)
    environment = Environment(user_classes=[user_class], host=host)
    new_context(environment, AgentSettings(run_id=RUN_ID, run_dir=run_dir, **options))
    recorder = RowRecorder(environment, run_dir)
    user = user_class(environment)
    user.on_start()
    try:
        yield user
    finally:
        user.on_stop()
        recorder.close()


def installed(module: str) -> bool:
    """Whether a gateway package is installed, found without importing it (some break under gevent)."""
    return importlib.util.find_spec(module) is not None


# The marks of a test file that runs a real LiteLLM proxy (skipped where litellm[proxy] is not installed)
LITELLM_TESTS = [
    pytest.mark.e2e,
    pytest.mark.gateways,
    pytest.mark.skipif(
        not installed("litellm"), reason="litellm[proxy] not installed (requirements-gateways.txt)"
    ),
]


@contextmanager
def tiktoken_offline() -> Iterator[None]:
    """tiktoken reads its encodings from the copies LiteLLM ships (it would download them otherwise)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("litellm not installed: no offline copy of tiktoken's encodings")
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(folder))
        yield


def rows(run_dir: Path, file_name: str) -> list[dict[str, str]]:
    path = run_dir / file_name
    if not path.exists():
        return []
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


__all__ = ["RUN_ID", "agent_user", "free_port", "hermes_gateway", "installed", "rows", "running_server"]


# Hermes Agent lives in a virtualenv of its own (requirements-hermes.txt); the tests find it here.
HERMES = os.environ.get("LOADKIT_HERMES_BIN") or shutil.which("hermes")
NEEDS_HERMES = [
    pytest.mark.gateways,
    pytest.mark.e2e,
    pytest.mark.skipif(
        not HERMES, reason="no hermes executable (set LOADKIT_HERMES_BIN; see docs/gateways.md)"
    ),
]
HERMES_KEY = "loadkit-test-key-0123456789"  # Hermes wants >= 16 characters


@contextmanager
def hermes_gateway(
    llm_url: str, home: Path, monkeypatch: pytest.MonkeyPatch, settings: str = "toolsets: []\n"
) -> Iterator[tuple[str, int]]:
    """Hermes' API server offline on a free port, its model the simulator at `llm_url`; yields (url, pid).
    `settings` is the rest of its config.yaml (YAML). The key is in API_SERVER_KEY (the preset's key
    variable) and LOADKIT_TEST_HERMES_KEY."""
    home.mkdir(parents=True, exist_ok=True)
    model = f"  default: sim-model\n  provider: custom\n  base_url: {llm_url}/v1\n  api_key: sk-sim\n"
    (home / "config.yaml").write_text(f"model:\n{model}{settings}")
    port = free_port()
    env = {"HERMES_HOME": str(home), "API_SERVER_ENABLED": "true", "API_SERVER_KEY": HERMES_KEY}
    env |= {"API_SERVER_PORT": str(port), "API_SERVER_HOST": "127.0.0.1"}
    env |= {"LOADKIT_TEST_HERMES_KEY": HERMES_KEY}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with running_server([HERMES, "gateway", "run", "--replace"], preset("hermes").health_path, port) as url:
        yield url, listening_pid(port)


def listening_pid(port: int) -> int:
    """The process listening on a loopback TCP port (the server itself, not a launcher in front of it)."""
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            return conn.pid
    raise TargetError(f"nothing listens on port {port}")
