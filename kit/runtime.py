"""A run's lifecycle inside a Locust process: from its start (`test_start`) to its stop (`test_stop`) and
the process's quit, each run has its own run directory, record, side sampler, watchers, load, ending and
report. Headless there is one run; each start in the web UI is a new one (kit/runs.py begins them).

The locustfile only forwards Locust's events here. Load shapes live in scenarios/, protocols in agents/,
tables in analysis/; the run's parts in kit/ (record, load, watchers, fleet, finish); this module
sequences them and owns no measurement math.
"""

from __future__ import annotations

import gc
import logging
import subprocess
import time

import gevent
from gevent.event import Event
from locust.env import Environment

from agents.run_context import RunContext, context_of, new_context
from contract import exit_codes
from contract.errors import KitError, one_line
from kit import finish, signals
from kit.delivery import AnsweredRows
from kit.disk import DiskGuard
from kit.judge import refuse_short_trends
from kit.live import FINISHED, RUNNING, LiveRun
from kit.liveness import liveness_of
from kit.load import Load, await_ramped_down, user_count
from kit.mcp_start import calls_mcp_tools
from kit.model_calls import model_calls_for
from kit.record import RunRecord
from kit.remote_sampler import RemoteSamplers
from kit.rows import RowRecorder
from kit.session import Session
from kit.settings import KitSettings, options_of, refresh
from kit.stopping import PROFILE_COMPLETE, Stopping
from kit.watchers import Watchers
from lifecycle.target import stop_target
from sampler.cpu_census import CpuCensus, census
from scenarios.profile import params_of

log = logging.getLogger("loadkit")
logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request would drown Locust's
WATCH_EVERY_S = 0.5
QUIT_GRACE_S = 10.0  # beyond the stop-timeout, for the profile's next tick and Locust's stop
WORKER_REPORT_S = 3.5  # workers report every 3 s (Locust's WORKER_REPORT_INTERVAL), plus a margin


class KitRun:
    def __init__(
        self,
        environment: Environment,
        settings: KitSettings,
        session: Session,
        meta: dict,
        disk: DiskGuard,
        samplers: tuple[subprocess.Popen | None, RemoteSamplers | None],
    ) -> None:
        """Built whole by kit/runs.py's begin_run, from what it started: the run's directory and its disk
        reserve, run.json's first content, the side sampler and the sampler services. Its agents' context
        is made here, fresh: nothing of an earlier run of the web UI reaches this one."""
        self.environment, self.settings, self.session = environment, settings, session
        self.context: RunContext = new_context(environment, settings.agent)
        self.context.run = self
        self.stopping = Stopping(environment)
        self.record = RunRecord(settings.run_dir, meta, disk, self.on_disk_error)
        self.recorder = RowRecorder(environment, settings.run_dir, on_write_error=self.record.failed)
        liveness = liveness_of(settings, session.target, self.record.note_mcp_probe)
        self.watchers = Watchers(environment, self.stopping, self.record, session.target, liveness, *samplers)
        self.watchers.model_calls = model_calls_for(settings, session.target.url, meta)
        self.live = LiveRun(settings.run_id, settings.run_dir, meta)
        self.answered = AnsweredRows(tool_calls=calls_mcp_tools(settings))
        self.recorder.listeners += [self.live.on_row, self.answered.on_row]
        self.load: Load | None = None  # built at the first tick, from the settings as they are then
        self.ending: gevent.Greenlet | None = None  # once begun; its value: the report's child (a greenlet)
        self.census: CpuCensus | None = None  # every process's CPU time at the load's start (host_others)

    def on_test_start(self) -> None:
        self.record.meta.setdefault("start_ts", time.time())
        self.census = self.census or census()
        self.live.state = RUNNING
        self.record.save()

    def on_test_stop(self) -> None:
        """STOP in the web UI (no stop asked before it), the profile's end, or an abort."""
        web_stop = self.environment.web_ui is not None and not options_of(self.environment).headless
        self.finish("stopped from the web UI" if web_stop else PROFILE_COMPLETE)

    def shape_tick(self, elapsed_s: float):
        """KitShape.tick(): the profile's target now, or None once the run should end (the workers of a
        master drained first: their stop-timeout, then the report with their last rows)."""
        load = self.load
        if load is None and self.stopping.request is None:
            load = self._start_load()
        tick = load.tick(elapsed_s) if load is not None and self.stopping.request is None else None
        if load is None or tick is None:
            self.stopping.ran_out()
            if self.session.fleet is not None:
                self.session.fleet.drain(self.environment.stop_timeout + WORKER_REPORT_S, WORKER_REPORT_S)
            else:
                await_ramped_down(self.environment)
            return None
        now = time.time()
        self.record.note_phase(tick.phase, now)
        self.record.write_users(load.users_row(tick, now))
        self.live.on_users(now, user_count(self.environment), tick.users)
        if self.session.fleet is not None:
            self.session.fleet.grant_round()
        return load.for_locust(tick)

    def _start_load(self) -> Load | None:
        """The first tick: the profile and its pacing, judge and watchers, from the settings as they are
        now (the web UI form may have changed the options: converted again here); None on a bad value."""
        settings, now = self.settings, time.time()
        try:
            if self.environment.web_ui is not None:
                settings = refresh(settings, options_of(self.environment))
                refuse_short_trends(settings)
                self.context.settings = settings.agent
            load = Load(self.environment, settings, self.session.fleet, now)
        except KitError as exc:  # a bad value in the web UI form: this run ends with its reason
            log.error("loadkit: error: %s", one_line(exc))
            self.stopping.ask(f"bad input: {one_line(exc)}", exc.exit_code)
            return None
        self.load = load
        load.listen(self.recorder)
        self.record.meta.update(load.meta(self.record.phases))
        self.record.save()
        self.live.judge, self.live.edit_note = load.judge, load.profile.edit_note()
        self.live.budget_bytes = load.profile.memory_budget_bytes
        self.watchers.watch_load(load, self.live)
        # What exists now (modules, the run's objects) is never garbage: out of the collector's sight, a
        # full collection under 200 agents takes ~7 ms instead of ~150 ms, a pause every arrival due
        # then would start late by.
        gc.freeze()
        return load

    def edit(self, users: int, spawn_rate: float) -> str | None:
        """EDIT in the web UI: the manual profile ramps to the new user count at the new rate, a new
        phase; None when applied, else why not."""
        shape = self.environment.shape_class
        if self.ending is not None or self.load is None or shape is None:
            return "no run is going on: start one"
        now, elapsed, profile = time.time(), shape.get_run_time(), self.load.profile
        if (why := profile.edit(users, spawn_rate, elapsed)) is not None:
            return why
        if tick := profile.tick(elapsed):  # None once -t has run out
            self.record.note_phase(tick.phase, now)
        edit = {"ts": now, "users": users, "spawn_rate": spawn_rate}
        self.record.meta["profile"].setdefault("edits", []).append(edit)
        self.live.params = params_of(profile)  # run.json keeps the start's, and the edits
        self.record.save()
        return None

    def finish(self, default_reason: str) -> None:
        """End this run, once, and wait for it: in a greenlet of its own, so that Locust killing the
        caller (runner.quit() ends the shape greenlet that fired test_stop) cannot cut it short."""
        if self.ending is None:
            self.stopping.closing = True
            self.ending = gevent.spawn(self._finish, default_reason)
        self.ending.join()

    def _finish(self, default_reason: str) -> gevent.Greenlet:
        report = finish.finish(self, default_reason)
        report.link_value(self._on_report)
        return report

    def _on_report(self, report: gevent.Greenlet) -> None:
        """The report's child ended: run.json says whether the report was written and how to rebuild it;
        a run whose report could not be written does not end 0 (its rows are whole). Settled here, once,
        so that quitting later touches no finished run."""
        outcome: finish.ReportOutcome = report.value
        meta = self.record.meta
        meta["report"] = outcome.as_json(self.record.run_dir)
        if not outcome.written and meta["exit_code"] == exit_codes.OK:
            meta["exit_code"] = exit_codes.REPORT_FAILED
            if run_of(self.environment) is self:  # a later run of the web UI settles its own
                self.environment.process_exit_code = exit_codes.REPORT_FAILED
        self.record.save()
        self.live.state = FINISHED

    def on_disk_error(self, why: str) -> None:
        """Stop at once; Locust's own HTML report (about 1 MB) is skipped: it would not fit. While the
        record is being written the error becomes the run's ending, unless its stop has a code of its own."""
        options_of(self.environment).html_file = None
        self.record.meta["locust_html"] = "not written: the run directory could not be written"
        if self.stopping.closing:
            self.stopping.overrule(f"disk error: {why}", exit_codes.DISK_ERROR)
        else:
            self.stopping.ask(f"disk error: {why}", exit_codes.DISK_ERROR, now=True)

    def on_quitting(self) -> None:
        """The process exits: finish the run if it is still going, then stop the target we started.
        The target's exit code goes into the run it ended with: a web UI run that had finished before
        (an idle quit) keeps its files as they were."""
        if self.session.quitting:  # a second shutdown (Locust's SIGTERM handler, again): the first exits
            Event().wait()
        self.session.quitting = True
        web_ui = self.environment.web_ui is not None
        finished_before = web_ui and self.ending is not None
        if web_ui and self.load is not None and self.ending is None:
            self._end_in_web_ui()
        self.finish("the Locust process quit" if web_ui else PROFILE_COMPLETE)
        code = stop_target(self.session.target)
        if code is not None and not finished_before:
            self.record.meta["target"]["exit_code"] = code
            self.record.save()
        if self.ending is not None and self.ending.successful():  # else its traceback is in the log
            self.ending.value.join()  # Locust settles the process's exit code next: _on_report's

    def _end_in_web_ui(self) -> None:
        """The web UI process quits mid-run: end the run as its profile's end does (in-flight work gets
        the stop-timeout). Locust's SIGTERM handler runs beside the kit's: let the kit's name the signal."""
        gevent.sleep(signals.QUIT_POLL_S)
        self.stopping.ask("the Locust process quit", None)
        deadline = time.monotonic() + self.environment.stop_timeout + QUIT_GRACE_S
        while self.ending is None and time.monotonic() < deadline:
            gevent.sleep(WATCH_EVERY_S)

    def on_quit(self, exit_code: int) -> None:
        """The console summary of the last run, after Locust's own tables and its report."""
        if self.ending is not None and self.ending.successful():  # else its traceback is in the log
            left_open = self.record.meta.get("sessions_left_open", [])
            finish.print_outcome(self.ending.value.get(), self.record.run_dir, exit_code, left_open)


def run_of(environment: Environment) -> KitRun | None:
    """The environment's current run (the last one, once it has finished); None on a worker."""
    return context_of(environment).run
