"""README's test command (tests/suite.py) packs short files into shared pytest processes, longest first,
and every test lands in exactly one of its parts. Pure: no pytest run."""

from __future__ import annotations

import itertools

from _pytest.mark.expression import Expression  # what `-m` evaluates

from tests import suite


def test_long_files_run_alone_and_short_ones_share_a_process_longest_first():
    times = {"a.py": 400.0, "b.py": 50.0, "c.py": 30.0, "d.py": 20.0, "e.py": 45.0}
    assert suite.packed(list(times), times) == [["a.py"], ["b.py", "c.py"], ["e.py", "d.py"]]
    assert suite.packed(["new.py"], {}) == [["new.py"]]  # no recorded time: a middling file


def test_the_parts_select_every_test_once_whatever_its_markers():
    """The unit part, the process-starting part and the timing part, as pytest evaluates `-m`."""
    parts = [f"{suite.UNIT} and not timing", suite.PROCESSES, suite.TIMING]
    for combination in itertools.product((False, True), repeat=4):
        marks = dict(zip(("e2e", "gateways", "faults", "timing"), combination, strict=True))
        chosen = [Expression.compile(part).evaluate(lambda name, m=marks: m[name]) for part in parts]
        assert chosen.count(True) == 1, (marks, chosen)
