"""Every analysis notebook runs top to bottom on a run directory the test suite produces."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from analysis.synthetic import T0, rounds_run, soak_samples, stream_requests, write_run_dir

ROOT = Path(__file__).parents[1]
NOTEBOOKS = sorted((ROOT / "analysis" / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    path = rounds_run(tmp_path_factory.mktemp("nb") / "run")
    write_run_dir(path, None, requests=stream_requests(2000, 400, t0=T0))
    return path


def test_there_are_four_notebooks():
    assert {p.stem for p in NOTEBOOKS} == {"capacity", "rounds", "soak", "cost"}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_top_to_bottom(notebook, run_dir, monkeypatch):
    monkeypatch.setenv("RUN_DIR", str(run_dir))
    monkeypatch.setenv("KIT_ROOT", str(ROOT))
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(notebook.parent)}}
    ).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert str(run_dir) in "".join(o.get("text", "") for o in outputs)
