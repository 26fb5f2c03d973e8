"""Every analysis notebook runs top to bottom, as a newcomer opens it, on a fresh run of its kind: the
capacity, rounds and soak notebooks on a capacity, rounds and soak run, the cost notebook on a smoke run
(README's main command), each made by `locust -f locustfile.py --headless` for this test.

Notebooks execute in a child interpreter with an empty HOME (no Jupyter, matplotlib or font cache):
the test process is gevent-patched by conftest, which breaks jupyter_client's channel threads.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from contract import exit_codes
from tests.locust_runs import run_locust
from tests.newcomer import newcomer_env
from tests.paths import REPO

NOTEBOOKS = sorted((REPO / "analysis" / "notebooks").glob("*.ipynb"))
# Short runs of each kind against the embedded simulator; each notebook reads the kind it is for.
FRESH_RUNS = {
    "cost": ("--load-profile", "smoke", "--duration", "5s"),
    "capacity": ("--load-profile", "capacity", "--memory-budget", "300MiB", "--sim-args", "--agent-mib 8"),
    "rounds": (
        *("TaskAgent", "--load-profile", "rounds", "--rounds", "1,2"),
        *("--sim-args", "--task-seconds 0.5 --dispatch-interval 0.1"),
    ),
    "soak": (
        "--load-profile",
        "soak",
        "--duration",
        "24s",
        "--trend-min-duration",
        "10",
        "--sample-interval",
        "0.5",
    ),
}
EXECUTE = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
meta = {"metadata": {"path": sys.argv[3]}}
client = NotebookClient(nb, timeout=120, kernel_name="python3", resources=meta)
client.execute()
nbformat.write(nb, sys.argv[2])
"""


def test_there_are_four_notebooks_one_per_fresh_run():
    assert {p.stem for p in NOTEBOOKS} == {"capacity", "rounds", "soak", "cost"} == set(FRESH_RUNS)


def test_the_one_extra_install_gives_jupyter_lab():
    """requirements-notebooks.txt (docs/analysis.md) is what `RUN_DIR=runs/<id> jupyter lab` needs."""
    assert "jupyterlab" in (REPO / "requirements-notebooks.txt").read_text()
    if importlib.util.find_spec("jupyterlab") is None:
        pytest.skip("JupyterLab not installed here: pip install -r requirements-notebooks.txt (.ci/run does)")
    assert (Path(sys.executable).parent / "jupyter-lab").is_file()  # the command the docs name


@pytest.mark.e2e
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_without_error_output_on_a_fresh_run_of_its_kind(notebook, tmp_path):
    run_dir = tmp_path / "run"
    made = run_locust(run_dir, *FRESH_RUNS[notebook.stem], timeout=180)
    assert made.returncode == exit_codes.OK, made.stderr[-2000:]
    home = tmp_path / "home"
    home.mkdir()
    # as README says: `RUN_DIR=runs/<id> jupyter lab` from the repository root, a path relative to it (the
    # kernel runs in the notebook's folder, the shell's PWD is the root)
    relative = os.path.relpath(run_dir, REPO)
    env = {**newcomer_env(home), "RUN_DIR": relative, "PWD": str(REPO)}
    env.pop("KIT_ROOT", None)
    out = tmp_path / notebook.name
    proc = subprocess.run(
        [sys.executable, "-c", EXECUTE, str(notebook), str(out), str(notebook.parent)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    nb = nbformat.read(out, as_version=4)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    errors = [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"]
    assert not errors, errors
    assert f"run directory: {REPO / relative}" in "".join(o.get("text", "") for o in outputs)
