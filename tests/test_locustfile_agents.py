"""locustfile.py exposes every agent class of agents/, so any can be named on the command line as its
docstring promises (`locust -f locustfile.py --headless McpAgent`); and a named one runs on the embedded
simulator."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest
from locust import User

import agents
from contract import exit_codes
from tests.paths import REPO


def agent_classes() -> set[str]:
    """The concrete Locust users defined in agents/."""
    found = set()
    for info in pkgutil.walk_packages(agents.__path__, "agents."):
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, User)
                and cls.__module__ == module.__name__
                and not cls.__dict__.get("abstract")
            ):
                found.add(name)
    return found


def locustfile_names() -> set[str]:
    tree = ast.parse((REPO / "locustfile.py").read_text(encoding="utf-8"))
    return {
        a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names
    }


def test_the_locustfile_exposes_every_agent_class():
    classes = agent_classes()
    assert {"ChatAgent", "TaskAgent", "McpAgent", "HermesKanbanAgent"} <= classes
    assert classes - locustfile_names() == set()


LOCUST = (sys.executable, "-m", "locust", "-f", "locustfile.py", "--headless")


@pytest.mark.e2e
def test_an_mcp_agent_named_on_the_command_line_runs_on_the_simulator(tmp_path):
    argv = [*LOCUST, "McpAgent", "-t", "5s", "--run-dir", str(tmp_path / "run")]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert done.returncode == exit_codes.OK, done.stderr[-2000:]
    assert "Unknown User" not in done.stderr


@pytest.mark.e2e
def test_a_kanban_agent_without_its_cli_is_refused_before_load(tmp_path):
    argv = [*LOCUST, "HermesKanbanAgent", "-t", "5s", "--hermes-command", "loadkit-no-hermes --flag"]
    done = subprocess.run(
        [*argv, "--run-dir", str(tmp_path / "run")], cwd=REPO, capture_output=True, text=True, timeout=180
    )
    lines = [ln for ln in done.stderr.splitlines() if "locust.main: Starting Locust" not in ln]
    assert done.returncode == exit_codes.BAD_INPUT, done.stderr[-2000:]
    assert len(lines) == 1 and "'loadkit-no-hermes'" in lines[0] and "--hermes-command" in lines[0], lines
    assert not (tmp_path / "run").exists()
