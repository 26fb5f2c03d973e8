"""Start-up warns, in one line naming the variable, when the preset's API-key variable is unset or empty,
and says nothing (and never prints the key) when it is set.

Truth: the environment handed to a real `locust -f locustfile.py --headless` run.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from agents.presets import key_warning
from lifecycle.target import free_port
from tests.locust_runs import REPO, locust_command

SECRET = "sk-loadkit-never-printed-0123456789"


def run_with(env: dict[str, str], run_dir) -> subprocess.CompletedProcess:
    """A 2 s LiteLLM-preset run at a closed loopback port (no gateway is needed to see start-up)."""
    url = f"http://127.0.0.1:{free_port()}"
    command = locust_command(run_dir, "--gateway", "litellm", "--host", url, "--no-host-check")
    return subprocess.run(
        [*command, "-t", "2s"], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.mark.e2e
def test_unset_key_variable_gives_one_warning_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_MASTER_KEY"}
    done = run_with(env, tmp_path / "run")
    warnings = [line for line in done.stderr.splitlines() if line.startswith("loadkit: warning: LITELLM")]
    assert len(warnings) == 1 and "LITELLM_MASTER_KEY is not set" in warnings[0], done.stderr[-1500:]


@pytest.mark.e2e
def test_set_key_gives_no_warning_and_is_never_printed(tmp_path):
    done = run_with({**os.environ, "LITELLM_MASTER_KEY": SECRET}, tmp_path / "run")
    assert "LITELLM_MASTER_KEY is not set" not in done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert all(
        SECRET not in p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file()
    )


def test_empty_counts_as_unset_and_no_variable_means_no_warning():
    assert key_warning("K", {"K": ""}) is not None
    assert key_warning(None, {}) is None and key_warning("K", {"K": "x"}) is None
