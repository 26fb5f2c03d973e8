"""Kit runs inside a Locust process: the target lives from `init` to `quit`; each run, from its start
(`test_start`) to its stop (`test_stop`), has its own run directory, side sampler, recorder, profile,
judge, stop reason, run.json and report. Headless there is one run; each start in the web UI is a new one.

The locustfile only forwards Locust's events here. Load shapes live in scenarios/, protocols in agents/,
tables in analysis/; this module wires them and owns no measurement math.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import subprocess
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import gevent
from gevent.event import Event
from locust.env import Environment
from locust.runners import STATE_RUNNING, MasterRunner, WorkerRunner

from agents import presets
from agents.base import warm_up_http
from agents.calibration import calibration_of
from agents.pacing import (
    ROUND_GRANT_MESSAGE,
    SHARE_MESSAGE,
    FleetArrivals,
    FleetRounds,
    OpenModelPacing,
    RoundsPacing,
    SweepPacing,
    expect_round_grants,
    follow_master_rounds,
    follow_master_share,
    lead_rounds,
    pacing_for,
    set_pacing,
)
from agents.recorder import Recorder
from agents.run_link import RunLink, set_run_link
from agents.settings import set_agent_settings
from agents.target_origin import with_userinfo
from agents.worker_cpu import on_worker_cpu, report_own_cpu
from contract import exit_codes, schema
from contract.csv_append import CsvAppender, RunFileError
from contract.csv_tail import last_sample_event
from contract.errors import DiskError, KitError, one_line
from contract.records import WorkerLoss
from contract.redact import redact
from contract.units import show
from kit import fleet, input_checks, rundir, signals, webui, worker_spawn
from kit.delivery import AnsweredRows, FleetWatch, loss_ends_run, shortfall
from kit.disk import DiskGuard
from kit.finish import ReportOutcome, print_outcome, start_report, write_locust_csvs, write_locust_html
from kit.judge import LiveJudge, refuse_short_trends
from kit.live import FINISHED, RUNNING, WRITING_REPORT, LiveRun
from kit.liveness import CHECK_EVERY_S, Liveness, sampler_stop
from kit.open_model import arrival_columns, open_model_meta, open_model_outcome, sweep_passes
from kit.remote_sampler import RemoteSamplers, start_remote_samplers
from kit.session import Session
from kit.settings import KitSettings, options_of, read_settings, refresh
from kit.startup import (
    choose_agents,
    fail,
    initial_meta,
    refuse_distributed,
    register_secrets,
    resolve_target,
    start_side_sampler,
    warn_before_load,
)
from lifecycle.target import Target, stop_target
from sampler.launch import stop_sampler
from scenarios import registry
from scenarios.arrivals import Pacer
from scenarios.breakpoint import stop_point as breakpoint_stop_point
from scenarios.evaluator import exit_code as exit_code_of
from scenarios.manual import ManualProfile
from scenarios.open_model import OpenModelProfile
from scenarios.profile import Profile, params_of
from scenarios.rounds import RoundsPlan
from scenarios.trace_replay import TraceReplayProfile

log = logging.getLogger("loadkit")
logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request would drown Locust's
WATCH_EVERY_S = 0.5
QUIT_GRACE_S = 10.0  # beyond the stop-timeout, for the profile's next tick and Locust's stop
JUDGE_EVERY_S = 1.0
WORKER_REPORT_S = 3.5  # workers report every 3 s (Locust's WORKER_REPORT_INTERVAL), plus a margin
WORKER_SPAWN_LEAD_S = 5.0  # distributed open model: workers spawn the agent pool before arrivals start
LOCAL_SPAWN_LEAD_S = 2.0  # one process: the pool spawns and runs its on_start before the first arrival
LOCUST_HISTORY_KEEP = 3600  # entries, one a second
_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class StopRequest:
    reason: str
    exit_code: int | None  # None: let Locust decide (0, or 1 on request errors)
    planned: bool = False  # the profile's own end (it ran out, or its driver ended it): not "early"


@dataclass
class KitRun:
    environment: Environment
    settings: KitSettings
    run_dir: Path
    meta: dict
    target: Target
    recorder: Recorder
    sampler: subprocess.Popen | None = None
    stop: StopRequest | None = None
    phases: list[dict] = field(default_factory=list)
    profile: Profile | None = None  # built at the first tick from the (UI) options
    closing: bool = False  # set at quitting: from then on a stopped sampler or target is expected
    pacing: OpenModelPacing | FleetArrivals | RoundsPacing | None = None
    remote: RemoteSamplers | None = None  # --sampler-url services
    lead_s: float = 0.0  # the profile's clock starts this much after the run's (worker spawn lead)
    judge: LiveJudge | None = None
    users_csv: CsvAppender = field(init=False)  # these three are set in setup(), right after
    driver_class: type | None = None
    disk: DiskGuard = field(init=False)
    liveness: Liveness = field(init=False)
    live: LiveRun = field(init=False)
    session: Session = field(init=False)
    finished: bool = False
    fleet: FleetWatch | None = None  # on a master: the workers it loses
    answered: AnsweredRows = field(default_factory=AnsweredRows)
    report: gevent.Greenlet | None = None  # the report's child process, once finished: its ReportOutcome
    finishing: gevent.Greenlet | None = None

    # ---- life cycle -------------------------------------------------------------------------------
    def save(self) -> None:
        self.guarded(rundir.write_run_json, self.run_dir, self.meta)

    def guarded(self, write, *args) -> None:
        """A write into the run directory; a failure (disk full) stops the run with DISK_ERROR."""
        try:
            write(*args)
        except RunFileError as exc:
            self.disk.failed(exc)
        except OSError as exc:  # Locust's CSVs, written with open()
            self.disk.failed(RunFileError(Path(exc.filename or self.run_dir), exc))

    def on_test_start(self) -> None:
        self.meta.setdefault("start_ts", time.time())
        self.live.state = RUNNING
        self.save()

    def on_test_stop(self) -> None:
        """STOP in the web UI (no stop asked before it), the profile's end, or an abort."""
        web_stop = self.environment.web_ui is not None and not options_of(self.environment).headless
        self.finish("stopped from the web UI" if web_stop else "profile complete")

    def request_stop(
        self, reason: str, exit_code: int | None, now: bool = False, planned: bool = False
    ) -> None:
        """Ask the run to end: the profile stops at its next tick, or at once when `now`."""
        if self.stop is None:
            self.stop = StopRequest(redact(reason), exit_code, planned)  # shown in run.json and the web UI
            log.warning("loadkit: stopping: %s", reason)
        if now and self.environment.runner is not None:
            self.environment.stop_timeout = 0  # nothing left to finish against: stop without grace
            gevent.spawn(self.environment.runner.quit)

    def finish(self, default_reason: str) -> None:
        """End this run, once, and wait for it: in a greenlet of its own, so that Locust killing the
        caller (runner.quit() ends the shape greenlet that fired test_stop) cannot cut it short."""
        if self.finishing is None:
            self.finished = self.closing = True
            self.finishing = gevent.spawn(self._finish, default_reason)
        self.finishing.join()

    def _finish(self, default_reason: str) -> None:
        """Stop the sampler, flush every row, write Locust's CSVs, judge, settle the exit code, write
        run.json, then start the report (in a child process)."""
        now = time.time()
        self.meta["end_ts"] = now
        self.close_phase(now)
        self.stop_sampler()
        if self.remote is not None:
            self.remote.close()
        self.recorder.close()
        self.meta["rows_written"] = self.recorder.counts()  # a row file with none is not missing
        self.guarded(self.users_csv.close)
        self.guarded(write_locust_csvs, self.environment, self.run_dir)
        self.write_locust_html()
        if self.fleet is not None:
            self.note_losses(self.fleet.poll(now))
        self.record_outcome(now)
        self.record_calibration()
        self.settle_shortfall()
        failure = self.disk.failure
        self.settle(default_reason)
        if self.disk.failure != failure:  # run.json itself hit the disk's limit: again, the reserve freed
            self.settle(default_reason)
        self.disk.release()  # the report may use the reserved space; the run needs it no more
        self.live.state = WRITING_REPORT
        self.report = start_report(self.run_dir)
        self.report.link_value(self.on_report)

    def on_report(self, report: gevent.Greenlet) -> None:
        """The report's child ended: run.json says whether the report was written and how to rebuild it;
        a run whose report could not be written does not end 0 (its rows are whole; the rebuild command
        is printed at the end). Settled here, once, so that quitting later touches no finished run."""
        outcome: ReportOutcome = report.value
        self.meta["report"] = outcome.as_json(self.run_dir)
        if not outcome.written and self.meta["exit_code"] == exit_codes.OK:
            self.meta["exit_code"] = exit_codes.REPORT_FAILED
            if run_of(self.environment) is self:  # a later run of the web UI settles its own
                self.environment.process_exit_code = exit_codes.REPORT_FAILED
        self.save()
        self.live.state = FINISHED

    def settle(self, default_reason: str) -> None:
        """The exit code and the ending, into run.json."""
        self.environment.process_exit_code = self.exit_code()
        stop = self.stop or StopRequest(default_reason, None, planned=default_reason == "profile complete")
        self.meta["stop_reason"], self.meta["ended_early"] = stop.reason, not stop.planned
        self.meta["exit_code"] = self.environment.process_exit_code
        self.save()

    def write_locust_html(self) -> None:
        """Locust's own HTML report, written here, whole or not at all, before the run's record: Locust
        writes it after the run ends, where a full disk costs a traceback, the record and the exit code."""
        options = options_of(self.environment)
        if options.html_file and self.disk.failure is None:
            self.guarded(write_locust_html, self.environment, options)
        options.html_file = None  # Locust's own write at exit is skipped

    def going(self) -> bool:
        """Load has started (the profile is built at the first tick) and the run has not finished."""
        return self.profile is not None and not self.finished

    def on_quitting(self) -> None:
        """The process exits: finish the run if it is still going, then stop the target we started.
        The target's exit code goes into the run it ended with: a web UI run that had finished before
        (an idle quit) keeps its files as they were."""
        if self.session.quitting:  # a second shutdown (Locust's SIGTERM handler, again): the first exits
            Event().wait()
        self.session.quitting = True
        web_ui = self.environment.web_ui is not None
        finished_before = web_ui and self.finished
        if web_ui and self.going():
            self.end_in_web_ui()
        self.finish("the Locust process quit" if web_ui else "profile complete")
        code = stop_target(self.target)
        if code is not None and not finished_before:
            self.meta["target"]["exit_code"] = code
            self.save()
        if self.report is not None:  # None when finishing failed (its traceback is in the log)
            self.report.join()  # Locust settles the process's exit code next: on_report's, once written

    def end_in_web_ui(self) -> None:
        """The web UI process quits mid-run: end the run as its profile's end does (in-flight work gets
        the stop-timeout). Locust's SIGTERM handler runs beside the kit's: let the kit's name the signal."""
        gevent.sleep(signals.QUIT_POLL_S)
        self.request_stop("the Locust process quit", None)
        deadline = time.monotonic() + self.environment.stop_timeout + QUIT_GRACE_S
        while self.finishing is None and time.monotonic() < deadline:
            gevent.sleep(WATCH_EVERY_S)

    def settle_shortfall(self) -> None:
        """A run whose load did not happen (workers lost, nothing answered) does not end "complete": when
        its stop has no code of its own, it ends with LOAD_NOT_DELIVERED and says why."""
        if self.profile is None or (self.stop is not None and self.stop.exit_code is not None):
            return
        losses = self.fleet.losses if self.fleet else []
        why = shortfall(losses, self.answered, workers_left=not (self.fleet and self.fleet.none_left))
        if why is not None:
            planned = self.stop is not None and self.stop.planned
            self.stop = StopRequest(why, exit_codes.LOAD_NOT_DELIVERED, planned)

    def exit_code(self) -> int:
        """A stop's own code (target died, load not delivered...), then failed thresholds (99), thresholds
        not judged (7, unless --allow-unjudged), request errors, a saturated load generator, else 0."""
        if self.stop and self.stop.exit_code is not None:
            return self.stop.exit_code
        if self.judge and exit_code_of(self.judge.results) != exit_codes.OK:
            return exit_codes.THRESHOLD_FAILED
        if self.judge and self.judge.unjudged() and not self.settings.profile.allow_unjudged:
            return exit_codes.THRESHOLDS_UNJUDGED
        runner = self.environment.runner
        if runner and (runner.errors or runner.exceptions):
            return options_of(self.environment).exit_code_on_error
        if self.meta.get("validity", {}).get("valid") is False:
            return exit_codes.INVALID_RUN
        return exit_codes.OK

    def on_quit(self, exit_code: int) -> None:
        """The console summary of the last run, after Locust's own tables and its report."""
        if self.report is not None:  # None when finishing failed (its traceback is in the log)
            print_outcome(self.report.get(), self.run_dir)

    # ---- the load shape --------------------------------------------------------------------------
    def shape_tick(self, elapsed_s: float):
        """KitShape.tick(): the profile's target now, or None once the run should end."""
        if self.stop is not None:
            self.drain_workers()
            return None
        profile = self.profile
        if profile is None:
            try:
                profile = self.start_profile()
            except KitError as exc:  # a bad value in the web UI form: this run ends with its reason
                log.error("loadkit: error: %s", one_line(exc))
                self.request_stop(f"bad input: {one_line(exc)}", exc.exit_code)
                return None
        tick = profile.tick(max(0.0, elapsed_s - self.lead_s))
        if tick is None:
            self.stop = StopRequest("profile complete", None, planned=True)
            self.drain_workers()
            return None
        now = time.time()
        self.note_phase(tick.phase, now)
        users = self.user_count()
        row = {"ts": now, "users": users, "target_users": tick.users, "phase": tick.phase}
        self.users_csv.write(row | arrival_columns(self.pacing, now))
        self.guarded(self.users_csv.flush)
        self.live.on_users(now, users, tick.users)
        if isinstance(self.pacing, FleetRounds):
            self.grant_round(self.pacing)
        if isinstance(self.pacing, RoundsPacing):
            task_agents = [c for c in self.environment.user_classes if getattr(c, "task_agent", False)]
            return (*tick.as_locust(), task_agents or None)
        if self.driver_class is not None:  # a profile's own driver (capacity, churn) runs alone
            if self.driver_class not in self.environment.user_classes:
                self.environment.user_classes.append(self.driver_class)
            return (*tick.as_locust(), [self.driver_class])
        return tick.as_locust()

    def user_count(self) -> int:
        return self.environment.runner.user_count if self.environment.runner else 0

    def start_profile(self) -> Profile:
        """Build the profile from the settings as they are at start (the web UI form may have changed
        the options: converted again here), and the pacing and live judge it needs."""
        if self.environment.web_ui is not None:
            self.settings = refresh(self.settings, options_of(self.environment))
            refuse_short_trends(self.settings)
            set_agent_settings(self.environment, self.settings.agent)
        now = time.time()
        self.profile = profile = registry.build_profile(self.settings.profile_name, self.settings.profile)
        self.driver_class = presets.resolve_class(profile.driver) if profile.driver else None
        runner = self.environment.runner
        if isinstance(profile, OpenModelProfile | TraceReplayProfile):  # arrivals wait for the pool to spawn
            self.lead_s = WORKER_SPAWN_LEAD_S if isinstance(runner, MasterRunner) else LOCAL_SPAWN_LEAD_S
        schedule = profile.paced_by(now + self.lead_s)
        if isinstance(schedule, Pacer) and isinstance(runner, MasterRunner):
            assert isinstance(profile, OpenModelProfile | TraceReplayProfile)  # what paces by arrivals
            self.pacing = self.share_arrivals(profile, runner, now)
        elif isinstance(schedule, RoundsPlan) and isinstance(runner, MasterRunner):
            self.pacing = self.lead_rounds(schedule, runner)
        else:
            self.pacing = pacing_for(schedule)
            set_pacing(self.environment, self.pacing)
        if isinstance(self.pacing, SweepPacing):  # its rates come from the closed passes' rows
            self.recorder.listeners.append(self.pacing.on_row)
        if (arrivals := open_model_meta(profile, now + self.lead_s)) is not None:
            self.meta["open_model"] = arrivals
        dropped = self.pacing.dropped if self.pacing else (lambda _now: 0)
        self.judge = judge = LiveJudge(
            list(self.settings.thresholds),
            now,
            self.run_dir / schema.SAMPLES_CSV,
            dropped,
            self.settings.slos,
        )
        self.recorder.listeners.append(judge.on_row)
        on_worker_cpu(self.environment, judge.observe_worker_cpu)
        if isinstance(runner, MasterRunner):
            self.fleet = FleetWatch(runner, self.meta.get("start_ts", now))
            gevent.spawn(self.watch_fleet, self.fleet)
        self.meta["profile"] = {
            "name": profile.name,
            "params": params_of(profile),
            "phases": self.phases,
        }
        self.meta["workload"] = self.settings.agent.workload.describe()
        self.meta["slos"] = [slo.as_json() for slo in self.settings.slos]
        self.save()
        self.live.judge = judge
        self.live.edit_note = edit_note(profile)
        if profile.name in ("capacity", "churn"):
            self.live.budget_bytes = self.settings.profile.capacity.memory_budget_bytes
        gevent.spawn(self.judge_forever, judge)
        # What exists now (modules, the run's objects) is never garbage: out of the collector's sight, a
        # full collection under 200 agents takes ~7 ms instead of ~150 ms, a pause every arrival due
        # then would start late by.
        gc.freeze()
        return profile

    def edit(self, users: int, spawn_rate: float) -> str | None:
        """EDIT in the web UI: the manual profile ramps to the new user count at the new rate, a new
        phase; None when applied, else why not."""
        if self.finished or self.profile is None:
            return "no run is going on: start one"
        shape = self.environment.shape_class
        if not isinstance(self.profile, ManualProfile) or shape is None:
            return edit_note(self.profile)
        now, elapsed = time.time(), shape.get_run_time()
        self.profile.edit(users, spawn_rate, elapsed)
        if tick := self.profile.tick(elapsed):  # None once -t has run out
            self.note_phase(tick.phase, now)
        self.meta["profile"].setdefault("edits", []).append(
            {"ts": now, "users": users, "spawn_rate": spawn_rate}
        )
        self.live.params = params_of(self.profile)  # run.json keeps the start's, and the edits
        self.save()
        return None

    def drain_workers(self) -> None:
        """On a master at the run's end: stop the workers' agents first (their stop-timeout, through the
        kit's own message: a second signal can still cut it short) and wait for the report that follows,
        which carries their last rows and arrival counts; a headless master would otherwise quit before
        it arrives (Locust sends `quit` without a `stop`)."""
        runner = self.environment.runner
        if isinstance(runner, MasterRunner) and runner.clients.all:
            fleet.drain(runner, self.environment.stop_timeout + WORKER_REPORT_S)
            runner.stop()
            gevent.sleep(WORKER_REPORT_S)

    def share_arrivals(
        self, profile: OpenModelProfile | TraceReplayProfile, runner: MasterRunner, now: float
    ) -> FleetArrivals:
        """On a master: each worker paces its share of the arrivals (every n-th of one sequence) and
        reports them, from WORKER_SPAWN_LEAD_S on (the profile's first tick, the agent pool, holds until
        then)."""
        workers = runner.clients.ready + runner.clients.spawning + runner.clients.running
        for n, worker in enumerate(workers):
            share = profile.share_doc(n, len(workers), now + self.lead_s)
            runner.send_message(SHARE_MESSAGE, share, client_id=worker.id)
        return FleetArrivals(self.environment)

    def lead_rounds(self, plan: RoundsPlan, runner: MasterRunner) -> FleetRounds:
        """On a master: the round clock lives here; every worker starts with no round tasks."""
        pacing = FleetRounds(plan)
        set_pacing(self.environment, pacing)
        for worker in runner.clients.ready + runner.clients.spawning + runner.clients.running:
            runner.send_message(ROUND_GRANT_MESSAGE, {"round": 0, "tasks": 0}, client_id=worker.id)
        return pacing

    def grant_round(self, pacing: FleetRounds) -> None:
        """Each tick on a master: once a round's agents are spawned, grant each worker as many of its
        tasks as it runs agents (Locust's own spread of the users)."""
        runner = self.environment.runner
        assert isinstance(runner, MasterRunner)  # FleetRounds is made only on a master
        workers = runner.clients.ready + runner.clients.spawning + runner.clients.running
        agents = {w.id: w.user_count for w in workers} if runner.state == STATE_RUNNING else None
        for worker, tasks in pacing.due_grants(agents).items():
            runner.send_message(ROUND_GRANT_MESSAGE, pacing.grant_doc(tasks), client_id=worker)

    def judge_forever(self, judge: LiveJudge) -> None:
        while not self.closing:
            gevent.sleep(JUDGE_EVERY_S)
            bound_locust_history(self.environment)
            now = time.time()
            due = [(th, r) for th, r in zip(judge.rules, judge.judge(now), strict=True) if r.abort_due]
            if due and self.stop is None:
                rule, result = due[0]
                self.note_breakpoint(result, now)
                self.live.aborted_expr = result.expr
                value = show(result.value, rule.value_unit)
                self.request_stop(
                    f"threshold failed: {result.expr} (value {value})", exit_codes.THRESHOLD_FAILED
                )

    def watch_fleet(self, watch: FleetWatch) -> None:
        while not self.closing:
            gevent.sleep(WATCH_EVERY_S)
            if not self.closing:
                self.note_losses(watch.poll(time.time()))

    def note_losses(self, losses: list[WorkerLoss]) -> None:
        """Workers lost mid-run, into run.json and the log. A round cannot finish without the tasks a lost
        worker held, and with no worker left nothing runs: both end the run at once."""
        for loss in losses:
            log.warning(
                "loadkit: %s: the run ends with exit code %d", loss.text(), exit_codes.LOAD_NOT_DELIVERED
            )
            self.meta.setdefault("workers_lost", []).append(dataclasses.asdict(loss))
            self.save()
            rounds = self.pacing.plan if isinstance(self.pacing, FleetRounds) else None
            reason = loss_ends_run(loss, rounds, none_left=self.fleet is not None and self.fleet.none_left)
            if reason and not self.closing:  # once closing, the record says what was lost
                self.request_stop(reason, exit_codes.LOAD_NOT_DELIVERED, now=True)

    def note_breakpoint(self, result, now: float) -> None:
        if self.profile is not None and self.profile.name == "breakpoint":
            elapsed = now - self.meta.get("start_ts", now)
            point = breakpoint_stop_point(self.profile, elapsed, now, result.expr, self.user_count())
            self.meta["breakpoint"] = dataclasses.asdict(point)

    def record_outcome(self, now: float) -> None:
        """Thresholds' final verdicts, rounds, dropped arrivals and the run's validity, into run.json."""
        if self.judge is None:
            return
        self.judge.judge(now, final=True)
        self.meta["thresholds"] = self.judge.as_json()
        self.meta["allow_unjudged"] = self.settings.profile.allow_unjudged
        self.meta["validity"] = self.judge.validity()
        if isinstance(self.pacing, RoundsPacing):
            self.pacing.plan.stop(now)
            self.meta["profile"]["rounds"] = self.pacing.plan.boundaries()
        if isinstance(self.pacing, (OpenModelPacing, FleetArrivals)) and self.profile is not None:
            arrivals = self.meta.get("open_model") or {}
            self.meta["open_model"] = open_model_outcome(arrivals, self.profile, self.pacing, now)
        if (passes := sweep_passes(self.pacing)) is not None:
            self.meta["sweep"] = passes
        self.save()

    def record_calibration(self) -> None:
        """The characters per token this process learnt from the gateway's usage (a master running no
        agents learnt none: each worker calibrates its own)."""
        calibration = calibration_of(self.environment)
        if "workload" in self.meta and (calibration.samples or calibration.implausible):
            self.meta["workload"]["calibration"] = calibration.describe()

    # ---- phases (profiles tag the time axis) -------------------------------------------------------
    def note_phase(self, name: str, now: float) -> None:
        if self.phases and self.phases[-1]["name"] == name and self.phases[-1]["end_ts"] is None:
            return
        self.close_phase(now)
        self.phases.append({"name": name, "start_ts": now, "end_ts": None})
        self.meta.setdefault("profile", {})["phases"] = self.phases
        self.save()

    def close_phase(self, now: float) -> None:
        if self.phases and self.phases[-1]["end_ts"] is None:
            self.phases[-1]["end_ts"] = now

    # ---- sampler and watch ------------------------------------------------------------------------
    def remote_target_exited(self, host: str) -> None:
        reason = f"target exited mid-run (seen by the sampler service on {host})"
        self.request_stop(reason, exit_codes.TARGET_DIED, now=True)

    def stop_sampler(self) -> None:
        if self.sampler is not None:
            stop_sampler(self.sampler)

    def watch(self) -> None:
        """End the run when the target dies (ours: its process; any: the sampler saw it go)."""
        while self.stop is None:
            gevent.sleep(WATCH_EVERY_S)
            if self.closing:
                return
            code = self.target.exit_code()
            if code is not None:
                self.request_stop(
                    f"target died mid-run (pid {self.target.pid}, exit code {code})",
                    exit_codes.TARGET_DIED,
                    now=True,
                )
            elif self.sampler is not None and self.sampler.poll() is not None:
                event = last_sample_event(self.run_dir / schema.SAMPLES_CSV)
                if event == "target_exited":
                    self.request_stop(
                        "target exited mid-run (seen by the sampler)", exit_codes.TARGET_DIED, now=True
                    )
                else:
                    if self.sampler.returncode == exit_codes.DISK_ERROR:
                        self.save()  # on a full disk this fails too: the kit's own line names the cause
                        samples = self.run_dir / schema.SAMPLES_CSV
                        self.disk.failed(f"cannot write {samples}: the sampler's write failed", said=True)
                    self.note_sampler_stopped()

    def on_disk_error(self, why: str) -> None:
        """Stop at once; Locust's own HTML report (about 1 MB) is skipped: it would not fit. While the
        record is being written the error becomes the run's ending, unless its stop has a code of its own."""
        options_of(self.environment).html_file = None
        self.meta["locust_html"] = "not written: the run directory could not be written"
        if self.finishing is None:
            self.request_stop(f"disk error: {why}", exit_codes.DISK_ERROR, now=True)
        elif self.stop is None or self.stop.exit_code is None:
            planned = self.stop is not None and self.stop.planned  # the load ran; its record fell short
            self.stop = StopRequest(f"disk error: {why}", exit_codes.DISK_ERROR, planned)

    def note_sampler_stopped(self) -> None:
        """The side sampler died mid-run: the run goes on, and says where its samples stop."""
        stopped = sampler_stop(
            self.run_dir / schema.SAMPLES_CSV,
            self.sampler.returncode if self.sampler else None,
            self.meta.get("start_ts"),
        )
        note = f"sampler stopped after {stopped['stopped_at_s']} s ({stopped['stopped_reason']})"
        log.warning("loadkit: %s; the run goes on without it", note)
        self.meta["sampler"].update(stopped)
        if self.judge is not None:
            self.judge.samples_stopped(note)
        self.sampler = None
        self.save()

    def watch_liveness(self) -> None:
        """End the run when the target is gone or has not answered its health check for a while."""
        try:
            while self.stop is None and not self.closing:
                gevent.sleep(CHECK_EVERY_S)
                reason = self.liveness.dead(time.monotonic())
                if reason and not self.closing:
                    self.request_stop(f"target died mid-run: {reason}", exit_codes.TARGET_DIED, now=True)
        finally:
            self.liveness.close()


def bound_locust_history(environment: Environment) -> None:
    """Keep Locust's per-second chart history to its last hour: it grows without bound otherwise
    (locust #2045), which an 8-hour soak would feel. Our own rows are on disk, complete."""
    history = environment.runner.stats.history if environment.runner else []
    if len(history) > LOCUST_HISTORY_KEEP:
        del history[: len(history) - LOCUST_HISTORY_KEEP]


def run_of(environment: Environment) -> KitRun | None:
    """The environment's current run (the last one, once it has finished)."""
    return _RUNS.get(environment)


def run_for_tick(environment: Environment) -> KitRun | None:
    """The run a shape tick drives: after a finished run, a new start in the web UI begins the next."""
    run = _RUNS.get(environment)
    if run is not None and run.finished and not run.session.quitting:
        try:
            run = begin_run(environment, run.settings, run.session)
        except KitError as exc:
            log.error("loadkit: the run could not start: %s", one_line(exc))
            return None
        if environment.shape_class is not None:  # the profile's clock starts once its sampler runs
            environment.shape_class.reset_time()
    return run


def all_runs() -> list[KitRun]:
    return list(_RUNS.values())


def edit_note(profile: Profile) -> str:
    """What EDIT in the web UI does for this profile."""
    if isinstance(profile, ManualProfile):
        return "EDIT changes the user count and spawn rate live (a new phase in run.json and users.csv)"
    return (
        f"EDIT does not apply to the {profile.name} profile: it sets the user count itself; "
        "STOP, choose the manual profile and start again to ramp by hand"
    )


def setup(environment: Environment) -> KitRun | None:
    """Locust `init`: settings converted once; on a worker only those and a row buffer; on master/local
    the target and the first run. Any KitError before load exits with its code and one line, leaving
    nothing behind."""
    options = options_of(environment)
    try:
        settings = read_settings(options, options.run_id or rundir.new_run_id())
        choose_agents(environment, settings)
    except KitError as exc:
        fail(exc)
    set_agent_settings(environment, settings.agent)
    warm_up_http()
    register_secrets(settings)
    if isinstance(environment.runner, (MasterRunner, WorkerRunner)):
        try:  # --processes workers share the master's options: they refuse too
            refuse_distributed(settings)
        except KitError as exc:
            fail(exc)
    if isinstance(environment.runner, WorkerRunner):
        worker_spawn.install()  # before the first spawn message: it would cost a parser build per option
        Recorder(environment, None)
        report_own_cpu(environment)
        follow_master_share(environment)
        follow_master_rounds(environment)
        fleet.follow_master_stop(environment)
        settle_heap()
        return None
    if isinstance(environment.runner, MasterRunner):
        lead_rounds(environment)
    try:
        refuse_short_trends(settings)
        input_checks.run_dir(settings.run_dir, options.reuse_run_dir)
        session = Session(
            resolve_target(settings), options.run_id or None, options.run_dir or None, options.html_file
        )
    except KitError as exc:
        fail(exc)
    warn_before_load(settings)
    environment.host = session.target.url
    try:
        run = begin_run(environment, settings, session)
    except KitError as exc:
        stop_target(session.target)
        fail(exc)
    if environment.web_ui is not None:
        webui.install(
            environment.web_ui,
            session,
            lambda: _RUNS[environment].live,
            run_edit(environment),
            lambda options: refresh(_RUNS[environment].settings, options),
        )
        webui.warn_if_exposed(options.web_host)
    # in the web UI a signal ends the process as --autoquit does: the web server stops, then Locust's
    # shutdown runs (quitting, its HTML report, quit)
    web_ui = environment.web_ui
    signals.install(lambda: _RUNS.get(environment), web_ui.stop if web_ui is not None else None)
    settle_heap()
    return run


def settle_heap() -> None:
    """What exists once the kit is set up (modules, classes, settings: ~70,000 objects) lives as long as
    the process: moved out of the collector's sight (gc.freeze), so a full collection walks only what the
    load made. Walking it all held the event loop 80-200 ms per full collection at 100 streams here, every
    reply waiting meanwhile (TTFT p50 +25 ms over raw httpx's)."""
    gc.collect()
    gc.freeze()


def run_edit(environment: Environment):
    """EDIT as the web UI calls it: on the current run."""
    return lambda users, spawn_rate: _RUNS[environment].edit(users, spawn_rate)


def begin_run(environment: Environment, settings: KitSettings, session: Session) -> KitRun:
    """A run of the session: its id and directory, run.json, row files, side sampler and watchers.
    Raises KitError when the sampler refuses to start."""
    options = options_of(environment)
    run_id, run_dir = session.next_run(settings.run_id, settings.run_dir)
    settings = dataclasses.replace(settings, run_id=run_id, run_dir=run_dir)
    options.run_id, options.run_dir = run_id, str(run_dir)  # Locust's own view (web UI, workers)
    options.html_file = session.html_file or str(run_dir / schema.LOCUST_HTML)
    target = session.target
    meta = initial_meta(settings, target)
    disk = reserve_disk(run_dir, meta)
    samples = run_dir / schema.SAMPLES_CSV  # the remote rows' writer first: it writes the header
    urls, token_env = list(settings.agent.sampler_url), settings.agent.sampler_token_env
    try:
        remote = start_remote_samplers(urls, token_env, samples, meta, lambda: _RUNS[environment].save())
        sampler = start_side_sampler(settings, target)
    except KitError:
        disk.release()  # refused: the run leaves no reserve behind
        raise
    run = KitRun(environment, settings, run_dir, meta, target, Recorder(environment, run_dir))
    run.sampler, run.session, run.remote = sampler, session, remote
    run.disk, disk.stop = disk, run.on_disk_error
    run.recorder.on_write_error = run.disk.failed
    run.users_csv = CsvAppender(run_dir / schema.USERS_CSV, schema.USER_COLUMNS)
    run.live = LiveRun(run_id, run_dir, run.meta)
    run.recorder.listeners += [run.live.on_row, run.answered.on_row]
    set_run_link(
        environment,
        RunLink(
            target.pid,
            target.started_by_kit,
            lambda reason, code: run.request_stop(reason, code, now=True, planned=code is None),
            stopping=lambda: run.stop is not None,
            target_dead=lambda: run.stop is not None and run.stop.exit_code == exit_codes.TARGET_DIED,
        ),
    )
    run.meta["sampler"] = {
        "interval_s": settings.target.sample_interval,
        "pid": run.sampler.pid if run.sampler else None,
        "argv": run.sampler.args if run.sampler else None,
    }
    run.save()
    _RUNS[environment] = run
    run.liveness = liveness_of(settings, target)
    gevent.spawn(run.watch)
    gevent.spawn(run.watch_liveness)
    if remote is not None:
        gevent.spawn(remote.run, lambda: run.closing, run.remote_target_exited)
    return run


def reserve_disk(run_dir: Path, meta: dict) -> DiskGuard:
    """The run record's reserve, before anything starts; a disk without room for it refuses the run
    (DiskError, exit 5), leaving a run.json that says so where even that fits."""
    try:
        return DiskGuard(run_dir)
    except DiskError as exc:
        ending = {"stop_reason": f"disk error: {exc}", "ended_early": True, "exit_code": exc.exit_code}
        with contextlib.suppress(RunFileError):
            rundir.write_run_json(run_dir, meta | ending)
        raise


def liveness_of(settings: KitSettings, target: Target) -> Liveness:
    """The target's pids (the kit's own and those named with --target-pid) and the health endpoint of
    any target with a URL."""
    pids = ([target.pid] if target.pid else []) + list(settings.agent.target_pid)
    health_path = settings.target.health_path
    url = with_userinfo(target.url, settings.target.host_auth)  # a gateway behind Basic auth
    health = f"{url}{health_path}" if target.url else None
    return Liveness(pids, health, settings.target.liveness_timeout, any_answer=not health_path)


def on_worker_test_start(environment: Environment) -> None:
    """A worker's test starts with the master's options (Locust sends them): its agents' settings again."""
    if run_of(environment) is None and isinstance(environment.runner, WorkerRunner):
        options = options_of(environment)
        try:
            settings = read_settings(options, options.run_id or "no-run-id")
        except KitError as exc:
            fail(exc)
        set_agent_settings(environment, settings.agent)
        if settings.profile_name == "rounds":
            expect_round_grants(environment)
