"""CsvAppender under a write that fails part-way: the file keeps whole lines only and the error is one
line naming the file and the cause. A file-size limit (RLIMIT_FSIZE, in a child process) makes the
kernel cut a write short and then refuse the rest, as a filling disk does.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from contract.csv_append import CsvAppender
from tests.locust_runs import REPO

LIMIT = 10_000  # bytes


def append_until_refused(path) -> subprocess.CompletedProcess:
    script = textwrap.dedent(
        f"""
        import resource, signal
        from contract.csv_append import CsvAppender, RunFileError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a plain EFBIG error instead of a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, ({LIMIT}, {LIMIT}))
        out = CsvAppender({str(path)!r}, ["n", "text"])
        try:
            for n in range(100_000):
                out.write({{"n": n, "text": "x" * 37}})
                if n % 7 == 6:
                    out.flush()
        except RunFileError as exc:
            print(exc)
            print(out.rows_written)
        """
    )
    child = [sys.executable, "-c", script]
    return subprocess.run(child, cwd=REPO, capture_output=True, text=True, timeout=60)


@pytest.mark.e2e
def test_a_refused_write_leaves_whole_lines_and_names_file_and_cause(tmp_path):
    path = tmp_path / "rows.csv"
    done = append_until_refused(path)
    assert done.returncode == 0, done.stderr
    message, rows_written = done.stdout.splitlines()
    assert message == f"cannot write {path}: File too large (EFBIG)"
    data = path.read_bytes()
    assert data.endswith(b"\n") and LIMIT - 7 * 45 < len(data) <= LIMIT
    lines = data.decode().splitlines()
    assert lines[0] == "n,text" and all(line == f"{i},{'x' * 37}" for i, line in enumerate(lines[1:]))
    assert len(lines) - 1 == int(rows_written)


def test_appending_to_an_existing_file_keeps_its_header_and_rows(tmp_path):
    path = tmp_path / "rows.csv"
    first = CsvAppender(path, ["a", "b"])
    first.write({"a": 1, "b": None})
    first.close()
    second = CsvAppender(path, ["a", "b"])
    second.write({"a": 2, "b": float("nan")})
    second.close()
    assert path.read_text() == "a,b\n1,\n2,\n" and second.rows_written == 1
