"""A real soak whose target is a process leaking at a known rate (tests/fixtures/leaker.py) while the
load goes to the simulator, and a soak of the simulator alone: shared by the end-to-end test (short, a
fast leak) and benchmarks/bench_soak_verdict.py (the shortest soak the kit allows). Not a test module.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from simgateway import launch
from tests.locust_runs import locust_command
from tests.paths import REPO

CHAT_SOAK = ("ChatAgent", "--load-profile", "soak", "--peak-users", "4", "--sim-args", "--ttft-ms 50")


@contextmanager
def leaker(mib_per_h: float, *shape: str) -> Iterator[subprocess.Popen]:
    """The fixture leaking `mib_per_h` (then STEP_MIB CHURN_MIB CHURN_EVERY_S), killed after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fixtures.leaker", str(mib_per_h), *shape],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@contextmanager
def soaks(
    runs: Path,
    duration: str,
    leak_mib_per_h: float,
    shape: tuple[str, ...],
    *extra: str,
    names: tuple[str, ...] = ("leak", "steady"),
    gates: tuple[str, ...] = ("memory_leak == 0", "error_drift == 0"),
):
    """Soaks side by side: `leak` (the fixture as --target-pid, load on a simulator) and `steady` (the
    kit's own simulator, no leak knob), each gated by `gates`."""
    gated = [arg for gate in gates for arg in ("--threshold", gate)]
    sim = launch.start(["--ttft-ms", "50"])
    runs.mkdir(parents=True, exist_ok=True)
    with leaker(leak_mib_per_h, *shape) as leak:
        target = ("--host", sim.url, "--target-pid", str(leak.pid))
        procs = {}
        for name, args in (("leak", target), ("steady", ())):
            if name in names:  # the console to a file: an unread pipe would stall a long run once full
                with open(runs / f"{name}.log", "w") as log:
                    command = locust_command(
                        runs / name, *CHAT_SOAK, *args, *gated, "--duration", duration, *extra
                    )
                    procs[name] = subprocess.Popen(command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
        try:
            yield {name: _finish(proc, runs / name, runs / f"{name}.log") for name, proc in procs.items()}
        finally:
            for proc in procs.values():
                proc.kill()
            sim.stop()


def _finish(proc: subprocess.Popen, run_dir: Path, log: Path) -> dict:
    proc.wait(timeout=3 * 3600)
    path = run_dir / "summary.json"
    summary = json.loads(path.read_text()) if path.exists() else {}
    return {"code": proc.returncode, "stdout": log.read_text(), "soak": summary.get("soak") or {}}
