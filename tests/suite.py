"""The whole test suite in parallel where that is safe: README's test command (`python -m tests.suite`),
which .ci/run runs. `--report` times the three sets (unit, before you commit, whole) for README.

Every test runs exactly once, in one of three parts: the unit tests in one pytest process; each file's
process-starting tests (e2e, gateways, faults) in a pytest process of its own, `--jobs` at a time,
longest first (they mostly wait on runs of a fixed length, so they overlap well even on 2 cores); then
the timing tests alone, never beside another test. Runs pytest only; it never decides a test's outcome.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.paths import REPO

UNIT = "not e2e and not gateways and not faults"
PROCESSES = "(e2e or gateways or faults) and not timing"
TIMING = "timing"
COMMIT_FILES = ("tests/test_newcomer.py", "tests/kit/test_kit_run.py")  # with the unit set: before a commit
TIMES = REPO / "tests" / "suite_times.json"  # seconds per file from the last --record: the order only
JOB_LIMIT_S = 45 * 60  # a job still running then is stopped (pytest's own per-test timeout comes first)
PACK_S = 90.0  # files shorter than this share a pytest process (each costs ~3-10 s to start), up to this
UNKNOWN_S = 60.0  # a file without a recorded time: a middling one
STOP_GRACE_S = 30.0  # SIGINT lets pytest tear its fixtures down (stop what they started); then SIGKILL
NO_TESTS = 5  # pytest's exit code when a selection is empty
FAILURE_CHARS = 12_000  # of a failed job's log, printed: its FAILURES section, the end kept when longer
# The interpreter's own bin/ first on PATH, as an activated virtualenv has it: tests start the commands
# installed beside it (litellm, langgraph, jupyter) by name.
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


@dataclass
class Job:
    """One pytest process: a name, its arguments, and once done its exit code, wall time and log."""

    name: str
    args: list[str]
    log: Path
    code: int | None = None
    seconds: float = 0.0
    proc: subprocess.Popen | None = field(default=None, repr=False)
    started: float = 0.0

    @property
    def failed(self) -> bool:
        return self.code not in (0, NO_TESTS)

    def summary(self) -> str:
        """pytest's last line ("3 passed, 1 skipped in 12.3s"), or why there is none."""
        lines = [ln.strip("= ") for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()]
        return lines[-1] if lines else f"no output (exit code {self.code})"


def pytest_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]


def files_with(marker_expr: str) -> list[str]:
    """Test files holding at least one test the marker expression selects."""
    done = subprocess.run(
        pytest_args("--collect-only", "-m", marker_expr),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return sorted({m.group(1) for m in re.finditer(r"^(tests/\S+\.py)::", done.stdout, re.M)})


def recorded_times() -> dict[str, float]:
    try:
        return json.loads(TIMES.read_text())
    except (OSError, ValueError):
        return {}


def start(job: Job) -> None:
    """Each job gets its own pytest temporary directory beside its log: nothing shared between jobs."""
    job.started = time.monotonic()
    with job.log.open("w") as out:
        args = [*job.args, f"--basetemp={job.log.with_suffix('.tmp')}"]
        job.proc = subprocess.Popen(args, cwd=REPO, env=ENV, stdout=out, stderr=subprocess.STDOUT)


def finish(job: Job, code: int) -> None:
    job.code, job.seconds = code, time.monotonic() - job.started
    mark = "FAILED" if job.failed else "ok"
    print(f"{mark:6} {job.seconds:7.1f} s  {job.name}: {job.summary()}", flush=True)
    if job.failed:  # what failed and why (pytest's FAILURES section), so a CI log alone explains it
        text = job.log.read_text(errors="replace")
        start = min((i for i in (text.find("= ERRORS ="), text.find("= FAILURES =")) if i >= 0), default=0)
        print(text[start:][-FAILURE_CHARS:], flush=True)


def stop(jobs: list[Job]) -> None:
    """Interrupt running jobs as Ctrl-C would (fixtures stop their processes), then kill what remains."""
    for job in jobs:
        if job.proc and job.proc.poll() is None:
            job.proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + STOP_GRACE_S
    for job in jobs:
        if job.proc:
            try:
                job.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                job.proc.kill()
                job.proc.wait()


def run_parallel(jobs: list[Job], width: int) -> None:
    """Run `jobs` in order, `width` at a time; each stops by itself or at JOB_LIMIT_S; interrupted
    (Ctrl-C, SIGTERM), the running ones are stopped first."""
    waiting: list[Job] = list(jobs)
    running: list[Job] = []
    try:
        _run(waiting, running, width)
    except BaseException:
        stop(running)
        raise


def _run(waiting: list[Job], running: list[Job], width: int) -> None:
    while waiting or running:
        while waiting and len(running) < width:
            start(job := waiting.pop(0))
            running.append(job)
        time.sleep(0.2)
        for job in list(running):
            assert job.proc is not None
            code = job.proc.poll()
            if code is None and time.monotonic() - job.started > JOB_LIMIT_S:
                job.proc.kill()
                code = job.proc.wait()
            if code is not None:
                running.remove(job)
                finish(job, code)


def packed(files: list[str], times: dict[str, float]) -> list[list[str]]:
    """Files in pytest processes, longest first: a long file alone, short ones together up to PACK_S."""
    packs: list[list[str]] = []
    for name in sorted(files, key=lambda f: -times.get(f, UNKNOWN_S)):
        fits = [p for p in packs if sum(times.get(f, UNKNOWN_S) for f in [*p, name]) <= PACK_S]
        if fits:
            fits[0].append(name)
        else:
            packs.append([name])
    return packs


def whole_suite(logs: Path, width: int, done: list[Job]) -> list[Job]:
    """The unit tests and each file's process-starting tests in parallel, then the timing tests alone.
    `done` receives each job as it is made, so an interrupted run still records what finished."""
    times = recorded_times()
    done.append(Job("unit tests", pytest_args("-m", f"{UNIT} and not timing"), logs / "unit.log"))
    for i, pack in enumerate(packed(files_with(PROCESSES), times)):
        done.append(Job(" ".join(pack), pytest_args(*pack, "-m", PROCESSES), logs / f"pack-{i}.log"))
    run_parallel(list(done), width)
    done.append(timing := Job("timing tests, alone", pytest_args("-m", TIMING), logs / "timing.log"))
    run_parallel([timing], 1)
    return done


def commit_set(logs: Path, width: int) -> list[Job]:
    """Before a commit: the unit set, and README's main command as a newcomer and a user run it."""
    jobs = [Job("unit set", pytest_args("-m", UNIT), logs / "unit-set.log")]
    jobs += [
        Job(f, pytest_args(f, "-m", ""), logs / f"{Path(f).stem}.log") for f in COMMIT_FILES
    ]  # all its tests
    run_parallel(jobs, width)
    return jobs


def record(jobs: list[Job]) -> None:
    """Keep each finished file's time of this run (a pack's time split by its files), for the next
    run's order and packing."""
    times = recorded_times()
    for job in jobs:
        files = [f for f in job.name.split() if f.startswith("tests/")]
        if job.code is not None and files:
            times |= {f: round(job.seconds / len(files), 1) for f in files}
    TIMES.write_text(json.dumps(dict(sorted(times.items())), indent=1) + "\n")


def timed(label: str, run) -> tuple[str, float, bool]:
    print(f"--- {label}", flush=True)
    t0 = time.monotonic()
    jobs = run()
    return label, time.monotonic() - t0, not any(j.failed for j in jobs)


def report(logs: Path, width: int) -> bool:
    """The three sets' wall times on this machine now, as a README table row each."""
    load = os.getloadavg()
    rows = [
        timed("unit set", lambda: [run_job(Job("unit set", pytest_args("-m", UNIT), logs / "u.log"))]),
        timed("before you commit", lambda: commit_set(logs, width)),
        timed("whole suite", lambda: whole_suite(logs, width, [])),
    ]
    stamp = time.strftime("%Y-%m-%d", time.gmtime())
    loads = f"load average {load[0]:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    print(f"\n{os.cpu_count()} cores, {stamp}, {loads}")
    print("| set | wall time | result |\n|---|---|---|")
    for label, seconds, ok in rows:
        print(f"| {label} | {seconds / 60:.1f} min | {'passed' if ok else 'FAILED'} |")
    return all(ok for _, _, ok in rows)


def run_job(job: Job) -> Job:
    run_parallel([job], 1)
    return job


def interrupted(signum: int, _frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.suite", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=3, help="pytest processes at once (default 3)")
    parser.add_argument("--commit", action="store_true", help="only the before-you-commit set")
    parser.add_argument("--report", action="store_true", help="time the unit, commit and whole sets")
    parser.add_argument("--record", action="store_true", help=f"keep each file's time in {TIMES.name}")
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="loadkit-suite-") as tmp:
        logs = Path(tmp)
        if opts.report:
            return 0 if report(logs, opts.jobs) else 1
        t0 = time.monotonic()
        jobs: list[Job] = []
        signal.signal(signal.SIGTERM, interrupted)
        try:
            jobs = commit_set(logs, opts.jobs) if opts.commit else whole_suite(logs, opts.jobs, jobs)
        finally:
            if opts.record:
                record(jobs)
        failed = [j.name for j in jobs if j.failed]
        minutes = (time.monotonic() - t0) / 60
        print(f"--- {len(jobs)} pytest processes in {minutes:.1f} min; failed: {failed or 'none'}")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
