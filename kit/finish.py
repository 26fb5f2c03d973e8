"""The end of a run: Locust's own CSV tables into the run directory, then the report and the console
summary, written by `python -m analysis RUN_DIR` in a child process of its own.

Why a child: the report needs pandas and matplotlib, and matplotlib's first import on a fresh machine runs
`fc-list` through the subprocess module, which gevent's patching breaks inside a thread (no report at all
on a newcomer's first run). A plain process has no patching, keeps the web UI live while it works, and
takes the report's memory and CPU off the load generator.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import gevent
from locust.env import Environment
from locust.html import get_html_report, process_html_filename
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from contract import exit_codes, schema
from kit.rundir import write_whole

KIT_ROOT = Path(__file__).resolve().parents[1]  # where `analysis` is importable from


def write_locust_csvs(environment: Environment, run_dir: Path) -> None:
    """Locust's own stats, failures and exceptions tables, as Locust writes them with --csv."""
    writer = StatsCSV(environment, PERCENTILES_TO_REPORT)
    for name, method in (
        ("stats", writer.requests_csv),
        ("failures", writer.failures_csv),
        ("exceptions", writer.exceptions_csv),
    ):
        with open(run_dir / f"{schema.LOCUST_CSV_PREFIX}_{name}.csv", "w", newline="", encoding="utf-8") as f:
            method(csv.writer(f))


def write_locust_html(environment: Environment, options) -> None:
    """Locust's own HTML report, as Locust writes it with --html ({u}, {r}, {t} filled in), whole."""
    process_html_filename(options)
    path = Path(options.html_file)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, get_html_report(environment, show_download_link=False))


@dataclass(frozen=True)
class ReportOutcome:
    """What the report's child process did: its exit code, the summary it printed, its one-line
    complaints (a plot not drawn, the report not written)."""

    returncode: int
    summary: str
    complaints: list[str]

    @property
    def written(self) -> bool:
        return self.returncode == exit_codes.OK

    def as_json(self, run_dir: Path) -> dict:
        return {
            "written": self.written,
            "problems": self.complaints,
            "rebuild": f"python -m analysis {run_dir}",
        }


def start_report(run_dir: Path) -> gevent.Greenlet:
    """Write the report and print nothing yet: `.get()` gives the ReportOutcome once the child ends."""
    return gevent.spawn(_report_child, run_dir)


def _report_child(run_dir: Path) -> ReportOutcome:
    # -P: the user's working directory must not shadow the kit's own `analysis` package
    env = os.environ | {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(KIT_ROOT), os.environ.get("PYTHONPATH")]))
    }
    try:
        child = subprocess.run(
            [sys.executable, "-P", "-m", "analysis", str(run_dir)],
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
    except OSError as exc:  # no process could be started (out of memory, no such interpreter)
        return ReportOutcome(exit_codes.REPORT_FAILED, "", [f"report not written: {exc}"])
    return ReportOutcome(child.returncode, child.stdout.rstrip("\n"), _complaints(child))


def _complaints(child: subprocess.CompletedProcess) -> list[str]:
    """The child's one-line messages; of a crash (a traceback), only its last line."""
    lines = [line for line in child.stderr.splitlines() if line.strip()]
    if child.returncode != exit_codes.OK and any(line.startswith("Traceback") for line in lines):
        return [f"report not written: {lines[-1].strip()}"]
    return lines


def print_outcome(outcome: ReportOutcome, run_dir: Path) -> None:
    """The console summary after Locust's own tables; a report that failed says so in one line."""
    for complaint in outcome.complaints:
        sys.stderr.write(f"loadkit: {complaint.removeprefix('loadkit: ').removeprefix('error: ')}\n")
    if not outcome.written:
        code = exit_codes.REPORT_FAILED
        sys.stderr.write(
            f"loadkit: no report (exit code {code}); rebuild it with: python -m analysis {run_dir}\n"
        )
    if outcome.summary:
        print(outcome.summary, flush=True)
