"""Imports read their input as carefully as the recorder reads its agents: /dev/zero, a FIFO, a directory,
JSON nested 100,000 deep, a file over --max-bytes: each import command ends with one line and exit 2
within 2 s, in under 300 MiB, and leaves no file behind. The recorder's own bad options likewise."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.capture.test_capture_recorder import ENV
from tests.paths import REPO

pytestmark = pytest.mark.e2e
MIB = 2**20


def bad_input(kind: str, folder: Path) -> tuple[Path, list[str], str]:
    """(the input, extra options, what the one line says) for one kind of bad input."""
    if kind == "dev-zero":
        return Path("/dev/zero"), [], "a character device, not a file"
    if kind == "fifo":
        os.mkfifo(folder / "spans.fifo")  # nobody writes it: opened, it would block for ever
        return folder / "spans.fifo", [], "a FIFO, not a file"
    if kind == "directory":
        return folder, [], "a directory, not a file"
    if kind == "deep":
        (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
        return folder / "deep.json", [], "JSON nested too deep to read"
    (folder / "big.json").write_bytes(b" " * (2 * MIB))
    return folder / "big.json", ["--max-bytes", str(MIB)], "over the 1 MiB ceiling (--max-bytes)"


def run_measured(argv: list[str]) -> tuple[int, str, float, float]:
    """(exit code, stderr, seconds, peak RSS in MiB) of one command, its own rusage (os.wait4)."""
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=REPO, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.monotonic() - started
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, err, took, usage.ru_maxrss / 1024


@pytest.mark.timing  # "within 2 s" is the wall time of a whole Python start: judged alone, on a quiet host
@pytest.mark.parametrize("command", ["import-otel", "import-litellm"])
@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "directory", "deep", "over-ceiling"])
def test_a_bad_input_is_one_line_exit_2_within_2_s_bounded_and_leaves_nothing(tmp_path, command, kind):
    folder = tmp_path / "in"
    folder.mkdir()
    path, extra, says = bad_input(kind, folder)
    out = tmp_path / "out" / "s.jsonl"
    out.parent.mkdir()
    argv = [sys.executable, "-m", "kit.capture", command, str(path), "--out", str(out), *extra]
    code, err, took, rss = run_measured(argv)
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    assert took < 2.0 and rss < 300, (took, rss)
    assert list(out.parent.iterdir()) == []  # no --out, no temporary beside it


def test_recorder_options_each_blamed_on_their_own_flag_in_one_line(tmp_path):
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    dangling = tmp_path / "dangling.jsonl"  # passes the checks (no file there), then cannot be created
    dangling.symlink_to(tmp_path / "gone" / "s.jsonl")
    cases = [
        (["--upstream", "http://127.0.0.1:1/\r\nX-Injected: 1"], "--upstream", "control characters"),
        (["--listen", f"127.0.0.1:{port}"], f"--listen 127.0.0.1:{port}", "address already in use"),
        (["--out", str(dangling)], f"--out {dangling}: cannot write it", ""),
    ]
    try:
        for options, flag, says in cases:
            args = {
                "--upstream": "http://127.0.0.1:1",
                "--out": str(tmp_path / "s.jsonl"),
                "--listen": "127.0.0.1:0",
            }
            args.update(dict(zip(options[::2], options[1::2], strict=True)))
            argv = [sys.executable, "-m", "kit.capture", *[w for pair in args.items() for w in pair]]
            done = subprocess.run(argv, cwd=REPO, env=ENV, capture_output=True, text=True, timeout=30)
            line = done.stderr.strip()
            assert done.returncode == 2 and len(line.splitlines()) == 1, done.stderr
            assert line.startswith(f"kit.capture: error: {flag}") and says in line, line
            assert not (tmp_path / "s.jsonl").exists() and not (tmp_path / "gone").exists()
    finally:
        busy.close()
