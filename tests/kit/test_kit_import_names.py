"""The kit's import names are generic (`agents`, `analysis`, `contract`...): another package a user installs
(the OpenAI Agents SDK installs a top-level `agents`; requirements-dev.txt installs it into the test venv) or
a folder of the same name in the user's working directory must never stand in for the kit's own, in the
Locust process or in any child it starts (the simulator, the sampler, the report)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contract import schema
from contract.exit_codes import OK
from tests.paths import REPO

pytestmark = pytest.mark.e2e

KIT_PACKAGES = ("agents", "analysis", "contract", "kit", "lifecycle", "sampler", "scenarios", "simgateway")
BIN = Path(sys.executable).parent


def users_project(root: Path) -> Path:
    """A working directory with a package of every kit name, each failing loudly if imported."""
    for name in KIT_PACKAGES:
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(f'raise ImportError("the user\'s own {name} package")\n')
    return root


def env_without_pythonpath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def installed_agents_package(cwd: Path) -> str:
    """Where a plain `import agents` resolves in this venv (the shadowing package, not the kit)."""
    done = subprocess.run(
        [sys.executable, "-c", "import agents; print(agents.__file__)"],
        cwd=cwd,
        env=env_without_pythonpath(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip()


def test_an_installed_agents_package_and_the_users_own_folders_never_replace_the_kits(tmp_path):
    neutral = tmp_path / "neutral"
    neutral.mkdir()
    shadow = installed_agents_package(neutral)
    assert "site-packages" in shadow, f"openai-agents is not installed (requirements-dev.txt): {shadow!r}"
    project = users_project(tmp_path / "project")
    run_dir = tmp_path / "run"
    args = ["--load-profile", "smoke", "--peak-users", "2", "--duration", "3s", "--run-dir", str(run_dir)]
    args += ["--sim-args", "--ttft-ms 20 --itl-ms 2 --output-tokens 5"]
    done = subprocess.run(
        [str(BIN / "locust"), "-f", str(REPO / "locustfile.py"), "--headless", "ChatAgent", *args],
        cwd=project,
        env=env_without_pythonpath(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == OK, done.stderr[-2000:]
    assert "the user's own" not in done.stderr
    assert (run_dir / schema.REPORT_MD).is_file() and (run_dir / schema.SAMPLES_CSV).stat().st_size > 0
    (run_dir / schema.REPORT_MD).unlink()
    rebuilt = subprocess.run(
        [sys.executable, "-m", "analysis", str(run_dir)],
        cwd=neutral,
        env={**env_without_pythonpath(), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rebuilt.returncode == 0, rebuilt.stderr[-2000:]
    assert (run_dir / schema.REPORT_MD).is_file()
