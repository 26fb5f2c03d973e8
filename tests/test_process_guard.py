"""The guard that keeps the unit set fast (tests/process_guard.py): a test that starts a process, itself
or through a fixture it shares, fails unless it is marked e2e. Checked on a pytest run of its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.paths import REPO

pytestmark = pytest.mark.e2e  # it runs pytest, which runs `true`

CASES = """
import subprocess
import pytest

@pytest.fixture(scope="module")
def server():
    subprocess.run(["true"], check=True)  # gevent's patched subprocess: an os.fork
    return "up"

def test_unmarked_spawn():
    subprocess.run(["true"], check=True)

@pytest.mark.e2e
def test_marked_spawn():
    subprocess.run(["true"], check=True)

def test_pure():
    assert sum([1, 2]) == 3

@pytest.mark.e2e
def test_first_user_of_a_spawning_fixture(server):
    assert server == "up"

def test_second_user_of_a_spawning_fixture(server):
    assert server == "up"

def test_os_system():
    assert os.system("true") == 0

import os
"""


def test_a_test_starting_a_process_without_the_e2e_marker_fails_and_says_how_to_mark_it(tmp_path):
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    e2e: starts processes\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rA",
            "-p",
            "tests.gevent_first",
            "-p",
            "tests.process_guard",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    outcome = dict(
        (name, state)
        for state, name in re.findall(r"^(PASSED|FAILED) test_cases.py::(\w+)", done.stdout, re.M)
    )
    assert outcome == {
        "test_unmarked_spawn": "FAILED",
        "test_marked_spawn": "PASSED",
        "test_pure": "PASSED",
        "test_first_user_of_a_spawning_fixture": "PASSED",
        "test_second_user_of_a_spawning_fixture": "FAILED",
        "test_os_system": "FAILED",
    }, done.stdout[-3000:]
    assert "is not marked e2e: add @pytest.mark.e2e" in done.stdout
    assert "fixture(s) server started one" in done.stdout
