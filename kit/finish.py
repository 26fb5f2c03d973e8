"""The end of a run, in one place: the samplers stopped, every row flushed, Locust's own CSV tables and
HTML report written, the load's outcome judged and recorded, the exit code settled into run.json; then
the report and the console summary, written by `python -m analysis RUN_DIR` in a child process of its own.

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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import gevent
import psutil
from locust.env import Environment
from locust.html import get_html_report, process_html_filename
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from agents.run_context import context_of
from contract import exit_codes, schema
from contract.child_env import kit_module_command, kit_module_env
from kit.cleanup import confirmed_open, still_open
from kit.delivery import AnsweredRows, shortfall
from kit.end_checks import end_checks
from kit.live import WRITING_REPORT, LiveRun
from kit.load import Load
from kit.record import RunRecord
from kit.rows import RowRecorder
from kit.rundir import write_whole
from kit.settings import options_of
from kit.stopping import Stopping
from kit.watchers import Watchers
from sampler.cpu_census import CpuCensus, busiest, census
from scenarios.evaluator import exit_code as exit_code_of


class EndingRun(Protocol):
    """What the end needs of a run."""

    environment: Environment
    record: RunRecord
    recorder: RowRecorder
    watchers: Watchers
    load: Load | None
    stopping: Stopping
    answered: AnsweredRows
    live: LiveRun
    census: CpuCensus | None


def finish(run: EndingRun, default_reason: str) -> gevent.Greenlet:
    """Stop the samplers, flush every row, write Locust's CSVs and HTML report, judge, settle the exit
    code, write run.json, then start the report: the greenlet whose value is its ReportOutcome."""
    now = time.time()
    record, meta = run.record, run.record.meta
    meta["end_ts"] = now
    record.close_phase(now)
    run.watchers.close(now)
    run.recorder.close()
    meta["rows_written"] = run.recorder.counts()  # a row file with none is not missing
    record.guarded(record.users_csv.close)
    record.guarded(write_locust_csvs, run.environment, record.run_dir)
    options = options_of(run.environment)
    if options.html_file and record.disk.failure is None:
        record.guarded(write_locust_html, run.environment, options)
    options.html_file = None  # Locust's own write at exit is skipped
    if run.load is not None:
        run.load.outcome(meta, now)
        record.save()
    calibration = context_of(run.environment).calibration  # a master running no agents learnt none
    if "workload" in meta and (calibration.samples or calibration.implausible):
        meta["workload"]["calibration"] = calibration.describe()
    note_sessions_left(record)
    note_host_others(run)
    settle_shortfall(run)
    failure = record.disk.failure
    settle(run, default_reason)
    if record.disk.failure != failure:  # run.json itself hit the disk's limit: again, the reserve freed
        settle(run, default_reason)
    record.disk.release()  # the report may use the reserved space; the run needs it no more
    run.live.state = WRITING_REPORT
    return start_report(record.run_dir)


def note_sessions_left(record: RunRecord) -> None:
    """run.json `sessions_left_open`: the sessions the run's rows show opened and never closed (a close
    that failed, a stop at once cut short, --no-cleanup): each id, for the console and kit.cleanup. On the
    kit's own simulator, stopped with the run, they go with it: `sessions_gone_with_simulator`, no alarm.
    Where the gateway can list a run's sessions, only those it lists as open are left open."""
    left = still_open(record.run_dir)
    own = (record.meta.get("target") or {}).get("kit_simulator")
    if left and not own and (listed := confirmed_open(record.meta, left)) is not None:
        if closed := [sid for sid in left if sid not in listed]:
            record.meta["sessions_confirmed_closed"] = closed  # the rows missed their closes
        left = listed
    if left:
        record.meta["sessions_gone_with_simulator" if own else "sessions_left_open"] = left


def note_host_others(run: EndingRun) -> None:
    """run.json `host_others`: the processes outside the kit's tree and the target that used the most CPU
    over the run, for the advice when the host was busy (analysis/validity.py)."""
    if run.census is None:
        return
    counted = _column(run.record.run_dir / schema.PROCESSES_CSV, "pid")
    own = {os.getpid()} | {p.pid for p in psutil.Process().children(recursive=True)}
    run.record.meta["host_others"] = busiest(run.census, census(), own | {int(p) for p in counted if p})


def _column(path: Path, name: str) -> list[str]:
    try:
        with open(path, newline="", encoding="utf-8") as file:
            return [row.get(name) or "" for row in csv.DictReader(file)]
    except OSError:
        return []


def settle_shortfall(run: EndingRun) -> None:
    """A run whose load did not happen (workers lost, nothing answered, its peak level not delivered)
    does not end "complete": when its stop has no code of its own, it ends with LOAD_NOT_DELIVERED and
    says why. The load generator's validity is read off the same rows (kit/end_checks.py)."""
    if run.load is None:
        return
    fleet = run.watchers.fleet
    losses = fleet.losses if fleet else []
    why = shortfall(losses, run.answered, workers_left=not (fleet and fleet.none_left))
    checks = end_checks(run.record.run_dir, run.record.meta)
    run.record.meta["validity"] = checks.validity
    why = why or checks.shortfall
    if why is not None:
        run.stopping.overrule(why, exit_codes.LOAD_NOT_DELIVERED)


def settle(run: EndingRun, default_reason: str) -> None:
    """The exit code and the ending, into run.json."""
    code = run.environment.process_exit_code = exit_code(run)
    stop = run.stopping.ending(default_reason)
    meta = run.record.meta
    meta["stop_reason"], meta["ended_early"], meta["exit_code"] = stop.reason, not stop.planned, code
    run.record.save()


def exit_code(run: EndingRun) -> int:
    """A stop's own code (target died, load not delivered...), then failed thresholds (99), thresholds
    not judged (7, unless --allow-unjudged), request errors (unless they are what the profile's verdict
    measures: a sweep's rates past the gateway's), a saturated load generator, else 0."""
    stop = run.stopping.request
    if stop and stop.exit_code is not None:
        return stop.exit_code
    load = run.load
    if load and exit_code_of(load.judge.results) != exit_codes.OK:
        return exit_codes.THRESHOLD_FAILED
    if load and load.judge.unjudged() and not load.settings.profile.allow_unjudged:
        return exit_codes.THRESHOLDS_UNJUDGED
    runner = run.environment.runner
    errors_judged = load is not None and load.profile.errors_are_its_measure  # by its verdict, in the report
    if runner and ((runner.errors and not errors_judged) or runner.exceptions):
        return options_of(run.environment).exit_code_on_error
    if run.record.meta.get("validity", {}).get("valid") is False:
        return exit_codes.INVALID_RUN
    return exit_codes.OK


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
    try:
        child = subprocess.run(
            kit_module_command("analysis", str(run_dir)),
            capture_output=True,
            text=True,
            env=kit_module_env(),
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


def print_outcome(outcome: ReportOutcome, run_dir: Path, code: int, left_open: list[str]) -> None:
    """The console summary after Locust's own tables; a report that failed says so in one line, with the
    exit code the run settled (REPORT_FAILED only when nothing else had a code of its own); the sessions
    left open on the gateway, each by its id, with the command that closes them."""
    for complaint in outcome.complaints:
        sys.stderr.write(f"loadkit: {complaint.removeprefix('loadkit: ').removeprefix('error: ')}\n")
    if not outcome.written:
        sys.stderr.write(
            f"loadkit: no report (exit code {code}); rebuild it with: python -m analysis {run_dir}\n"
        )
    if outcome.summary:
        print(outcome.summary, flush=True)
    if left_open:
        sys.stderr.write(
            f"loadkit: {len(left_open)} session(s) left open on the gateway: {', '.join(left_open)}; "
            f"close them with: python -m kit.cleanup {run_dir}\n"
        )
