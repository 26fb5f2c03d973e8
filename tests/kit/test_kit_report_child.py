"""The report's child process (kit/finish.py): a report that cannot be written is one line and the rebuild
command, never a traceback. The newcomer's whole first run (empty HOME, no caches) is tests/test_newcomer.py.
"""

from __future__ import annotations

import pytest

from contract import exit_codes
from kit.finish import print_outcome, start_report

pytestmark = pytest.mark.e2e


def test_a_report_that_cannot_be_written_is_one_line_with_the_rebuild_command(tmp_path, capsys):
    """The report's child process really fails (a directory that is no run): the outcome says so, the
    kit prints one line of it and the rebuild command, and no traceback."""
    outcome = start_report(tmp_path).get()
    assert not outcome.written and outcome.returncode != 0
    assert outcome.as_json(tmp_path) == {
        "written": False,
        "problems": outcome.complaints,
        "rebuild": f"python -m analysis {tmp_path}",
    }
    print_outcome(outcome, tmp_path, exit_codes.REPORT_FAILED, [])
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 2, err
    assert "not a run directory" in err and f"rebuild it with: python -m analysis {tmp_path}" in err
    assert f"exit code {exit_codes.REPORT_FAILED}" in err
    print_outcome(outcome, tmp_path, exit_codes.LOAD_NOT_DELIVERED, [])  # a code of the run's own: said
    assert f"(exit code {exit_codes.LOAD_NOT_DELIVERED})" in capsys.readouterr().err
