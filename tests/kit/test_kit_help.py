"""`python -m kit.help` lists every option the kit adds to Locust's, with its help text (Locust answers
`locust -f locustfile.py --help` before it imports the locustfile, so it cannot show them)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from locust.argument_parser import get_empty_argument_parser

from kit import options
from scenarios import registry
from tests.locust_runs import REPO

pytestmark = pytest.mark.e2e


def kit_flags() -> list[str]:
    parser = get_empty_argument_parser(add_help=False)
    before = {flag for action in parser._actions for flag in action.option_strings}
    options.add_arguments(parser)
    registry.add_arguments(parser)
    return sorted(flag for action in parser._actions for flag in action.option_strings if flag not in before)


def test_kit_help_lists_every_kit_option():
    done = subprocess.run(
        [sys.executable, "-m", "kit.help"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-1000:]
    flags = kit_flags()
    assert len(flags) > 40 and "--memory-budget" in flags
    missing = [flag for flag in flags if flag not in done.stdout]
    assert missing == []
