"""Start-up says, in one line, when the profile's peak puts more agents in one load-generator process than
the streams one process times well, and how many processes would spread them; it says nothing below.

Truth: the arithmetic of the limit (contract/schema.py), and a real `locust` run's start-up.
"""

from __future__ import annotations

import math

import pytest

from contract.schema import STREAMS_PER_PROCESS
from kit.startup import streams_note
from lifecycle.target import free_port
from tests.locust_runs import run_locust

OVER = STREAMS_PER_PROCESS * 2 + 1


def test_more_agents_than_one_process_times_well_are_named_with_the_processes_that_spread_them():
    note = streams_note(OVER, 1)
    assert note is not None and note.startswith(f"up to {OVER} agents in one load-generator process")
    assert f"--processes {math.ceil(OVER / STREAMS_PER_PROCESS)} " in note


def test_agents_within_the_limit_per_process_get_no_note():
    assert streams_note(STREAMS_PER_PROCESS, 1) is None
    assert streams_note(OVER, 3) is None  # spread over 3 processes each holds fewer than the limit
    assert streams_note(1, 0) is None  # a driver (one user) or no count of processes


@pytest.mark.e2e
def test_the_note_is_one_line_at_start(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens: start-up is all this reads
    args = ("ChatAgent", "--load-profile", "manual", "-u", str(OVER), "-r", str(OVER), "-t", "1s")
    done = run_locust(tmp_path / "run", *args, "--host", url, "--no-host-check")
    notes = [line for line in done.stderr.splitlines() if line.startswith("loadkit: note: up to")]
    assert notes == [f"loadkit: note: {streams_note(OVER, 1)}"], done.stderr[-1500:]
