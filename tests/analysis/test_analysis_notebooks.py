"""Every analysis notebook runs top to bottom on a run directory the test suite produces.

Notebooks execute in a child interpreter: the test process is gevent-patched by conftest, which breaks
jupyter_client's channel threads.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from analysis.synthetic import T0, rounds_run, stream_requests, write_run_dir
from tests.paths import REPO

NOTEBOOKS = sorted((REPO / "analysis" / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    path = rounds_run(tmp_path_factory.mktemp("nb") / "run")
    write_run_dir(path, None, requests=stream_requests(2000, 400, t0=T0))
    return path


def test_there_are_four_notebooks():
    assert {p.stem for p in NOTEBOOKS} == {"capacity", "rounds", "soak", "cost"}


EXECUTE = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
meta = {"metadata": {"path": sys.argv[3]}}
client = NotebookClient(nb, timeout=120, kernel_name="python3", resources=meta)
client.execute()
nbformat.write(nb, sys.argv[2])
"""


@pytest.mark.e2e
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_top_to_bottom(notebook, run_dir, tmp_path):
    env = {**os.environ, "RUN_DIR": str(run_dir), "KIT_ROOT": str(REPO)}
    out = tmp_path / notebook.name
    proc = subprocess.run(
        [sys.executable, "-c", EXECUTE, str(notebook), str(out), str(notebook.parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    nb = nbformat.read(out, as_version=4)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert str(run_dir) in "".join(o.get("text", "") for o in outputs)
