"""A signal at any moment of start-up leaves a record: SIGTERM at 20 instants spread over the first 3 s
of the kit's start-up (from the moment its handler exists: Locust's option parsing, the embedded
simulator and the sampler starting, the first agents), each a real `locust -f locustfile.py --headless`
run, leaves run.json with the stop reason and exit code 143 and nothing the run started alive. A SIGTERM
at exec, before Python reached the locustfile (Locust's own imports: 0.8-1.8 s on this busy 2-core host,
measured with the kernel's SigCgt mask), ends the process by the default action before anything was
started: no run directory, nothing left.
"""

from __future__ import annotations

import json
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from contract import exit_codes, schema
from tests.fault_runs import KitProcess
from tests.locust_runs import wait_for

pytestmark = [pytest.mark.faults, pytest.mark.e2e]
INSTANTS = [round(3.0 * i / 19, 2) for i in range(20)]  # 0 to 3 s into the kit's start-up
AT_ONCE = 4  # runs side by side: 20 one after the other would take minutes
SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


@dataclass
class Outcome:
    at: float
    code: int
    run_dir: Path
    left: list[int]  # its processes still alive 10 s after its exit


def catches_sigterm(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    line = next(x for x in status.splitlines() if x.startswith("SigCgt:"))
    return bool(int(line.split()[1], 16) & SIGTERM_BIT)


def signalled_at(tmp_path: Path, at: float | None) -> Outcome:
    """SIGTERM `at` seconds after the kit's handler exists (None: at once after exec)."""
    kit = KitProcess.start(
        tmp_path / f"run-{at}",
        *("ChatAgent", "--load-profile", "smoke", "--peak-users", "2", "--duration", "20s"),
        *("--sample-interval", "0.2", "--stop-timeout", "2"),
    )
    family: set[int] = set()
    try:
        if at is not None:
            wait_for(lambda: catches_sigterm(kit.proc.pid), 60, "the kit's signal handler")
            started = time.monotonic()
            while time.monotonic() - started < at:
                family |= {p.pid for p in _children(kit.proc.pid)}
                time.sleep(0.01)
        kit.signal(signal.SIGTERM)
        code = kit.wait(90)
    finally:
        kit.kill()
    deadline = time.monotonic() + 10  # what the run started stops with it, within seconds
    while (left := [pid for pid in family if _alive(pid)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return Outcome(at or 0.0, code, kit.run_dir, left)


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_sigterm_at_any_instant_of_start_up_leaves_run_json_with_its_reason_and_143(tmp_path):
    with ThreadPoolExecutor(AT_ONCE) as pool:
        outcomes = list(pool.map(lambda at: signalled_at(tmp_path, at), INSTANTS))
    for o in outcomes:
        assert not o.left, f"at {o.at} s: left alive {o.left}"
        assert o.code == exit_codes.INTERRUPTED[signal.SIGTERM], f"at {o.at} s: exit {o.code}"
        meta = json.loads((o.run_dir / schema.RUN_JSON).read_text())
        assert meta["exit_code"] == o.code and meta["stop_reason"].startswith("interrupted by SIGTERM"), meta
        assert meta["ended_early"] is True


def test_sigterm_before_python_reaches_the_locustfile_leaves_nothing(tmp_path):
    """Nothing can catch it yet (nothing is started either): the default action, no run directory."""
    outcome = signalled_at(tmp_path, None)
    assert outcome.code == -signal.SIGTERM and not outcome.left
    assert not outcome.run_dir.exists()
