"""The end of a run: Locust's own CSV tables into the run directory, then the report (in a thread) and
the console summary (analysis/ is imported only here, late: pandas and matplotlib are not needed before).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from gevent.event import AsyncResult
from gevent.threadpool import ThreadPool
from locust.env import Environment
from locust.html import get_html_report, process_html_filename
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from contract import schema
from kit.rundir import write_whole

_REPORTS = ThreadPool(1)


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


def start_report(run_dir: Path) -> AsyncResult:
    """Write the report in a thread, so the web UI stays live meanwhile (it takes seconds); one report
    at a time (matplotlib's pyplot is not thread-safe). `.get()` waits for it."""
    return _REPORTS.spawn(write_report_safely, run_dir)


def write_report_safely(run_dir: Path) -> None:
    """report.md/html of a finished run; a failed report must not hide the summary or the rows."""
    from analysis.report import write_report

    try:
        write_report(run_dir)
    except Exception as exc:  # noqa: BLE001 - the rows and run.json are written already
        sys.stderr.write(f"loadkit: report not written: {type(exc).__name__}: {exc}\n")


def print_summary(run_dir: Path) -> None:
    from analysis.load import load_run
    from analysis.summary import console_summary

    print(console_summary(load_run(run_dir)), flush=True)
