"""One kit run inside a Locust process, from `init` to `quit`: run directory, target, side sampler,
recorder, stop reasons, run.json, and the end-of-run report and summary.

The locustfile only forwards Locust's events here. Load shapes live in scenarios/, protocols in agents/,
tables in analysis/; this module wires them and owns no measurement math.
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import gevent
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from agents import presets
from agents.pacing import (
    SHARE_MESSAGE,
    FleetArrivals,
    OpenModelPacing,
    RoundsPacing,
    follow_master_share,
    set_pacing,
)
from agents.recorder import Recorder
from agents.run_link import RunLink, set_run_link
from agents.worker_cpu import on_worker_cpu, report_own_cpu
from contract import exit_codes, schema
from contract.csv_append import CsvAppender
from contract.csv_tail import last_sample_event
from kit import rundir, webui
from kit.finish import print_report_and_summary, write_locust_csvs
from kit.judge import LiveJudge
from kit.remote_sampler import RemoteSamplers, start_remote_samplers
from kit.startup import (
    KitInputError,
    apply_gateway_preset,
    check_config,
    fail_input,
    initial_meta,
    profile_name,
    resolve_target,
    start_side_sampler,
)
from lifecycle.target import (
    Target,
    TargetError,
    stop_target,
)
from sampler.launch import stop_sampler
from scenarios import registry
from scenarios.breakpoint import stop_point as breakpoint_stop_point
from scenarios.evaluator import exit_code as exit_code_of

log = logging.getLogger("loadkit")
logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request would drown Locust's
WATCH_EVERY_S = 0.5
JUDGE_EVERY_S = 1.0
TREE_REFRESH_MIN_S = 0.5  # re-finding the target's processes costs ~3 ms (FIELD-NOTES)
LOCUST_HISTORY_KEEP = 3600  # entries, one a second
WORKER_SPAWN_LEAD_S = 5.0  # distributed open model: workers spawn the agent pool before arrivals start
_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class StopRequest:
    reason: str
    exit_code: int | None  # None: let Locust decide (0, or 1 on request errors)


@dataclass
class KitRun:
    environment: Environment
    run_dir: Path
    meta: dict
    target: Target
    recorder: Recorder
    sampler: subprocess.Popen | None = None
    remote: RemoteSamplers | None = None  # --sampler-url services
    stop: StopRequest | None = None
    phases: list[dict] = field(default_factory=list)
    profile: object | None = None  # a scenarios Profile, built at the first tick from the (UI) options
    closing: bool = False  # set at quitting: from then on a stopped sampler or target is expected
    pacing: OpenModelPacing | FleetArrivals | RoundsPacing | None = None
    judge: LiveJudge | None = None
    users_csv: CsvAppender | None = None
    driver_class: type | None = None
    lead_s: float = 0.0  # the profile's clock starts this much after the run's (worker spawn lead)

    # ---- life cycle -------------------------------------------------------------------------------
    def save(self) -> None:
        rundir.write_run_json(self.run_dir, self.meta)

    def on_test_start(self) -> None:
        self.meta.setdefault("start_ts", time.time())
        self.save()

    def on_test_stop(self) -> None:
        self.meta["end_ts"] = time.time()
        self.close_phase(self.meta["end_ts"])

    def request_stop(self, reason: str, exit_code: int | None, now: bool = False) -> None:
        """Ask the run to end: the profile stops at its next tick, or at once when `now`."""
        if self.stop is None:
            self.stop = StopRequest(reason, exit_code)
            log.warning("loadkit: stopping: %s", reason)
        if now and self.environment.runner is not None:
            self.environment.stop_timeout = 0  # nothing left to finish against: stop without grace
            gevent.spawn(self.environment.runner.quit)

    def on_quitting(self) -> None:
        """Stop what we started, flush every row, write Locust's CSVs, judge, settle the exit code."""
        self.closing = True
        self.stop_sampler()
        if self.remote is not None:
            self.remote.close()
        code = stop_target(self.target)
        if code is not None:
            self.meta["target"]["exit_code"] = code
        self.recorder.close()
        self.users_csv.close()
        write_locust_csvs(self.environment, self.run_dir)
        self.record_outcome(time.time())
        self.environment.process_exit_code = self.exit_code()

    def exit_code(self) -> int:
        """A stop's own code (target died...), then failed thresholds (99), request errors, a saturated
        load generator, else 0."""
        if self.stop and self.stop.exit_code is not None:
            return self.stop.exit_code
        if self.judge and exit_code_of(self.judge.results) != exit_codes.OK:
            return exit_codes.THRESHOLD_FAILED
        runner = self.environment.runner
        if runner and (runner.errors or runner.exceptions):
            return self.environment.parsed_options.exit_code_on_error
        if self.meta.get("validity", {}).get("valid") is False:
            return exit_codes.INVALID_RUN
        return exit_codes.OK

    def on_quit(self, exit_code: int) -> None:
        """Final run.json, report and the console summary, after Locust's own tables."""
        self.meta.setdefault("end_ts", time.time())
        self.meta["stop_reason"] = self.stop.reason if self.stop else "profile complete"
        self.meta["exit_code"] = exit_code
        self.save()
        print_report_and_summary(self.run_dir)

    # ---- the load shape --------------------------------------------------------------------------
    def shape_tick(self, elapsed_s: float):
        """KitShape.tick(): the profile's target now, or None once the run should end."""
        if self.stop is not None:
            return None
        if self.profile is None:
            self.start_profile()
        tick = self.profile.tick(max(0.0, elapsed_s - self.lead_s))
        if tick is None:
            return None
        now = time.time()
        self.note_phase(tick.phase, now)
        self.users_csv.write(
            {
                "ts": now,
                "users": self.environment.runner.user_count,
                "target_users": tick.users,
                "phase": tick.phase,
            }
        )
        self.users_csv.flush()
        if isinstance(self.pacing, RoundsPacing):
            task_agents = [c for c in self.environment.user_classes if getattr(c, "task_agent", False)]
            return (*tick.as_locust(), task_agents or None)
        if self.driver_class is not None:  # a profile's own driver (capacity, churn) runs alone
            if self.driver_class not in self.environment.user_classes:
                self.environment.user_classes.append(self.driver_class)
            return (*tick.as_locust(), [self.driver_class])
        return tick.as_locust()

    def start_profile(self) -> None:
        """Build the profile and thresholds from the options as they are at start (the web UI form may
        have changed them), and the pacing and live judge they need."""
        options = self.environment.parsed_options
        now = time.time()
        self.profile = registry.build_profile(profile_name(options), options)
        self.driver_class = presets.resolve_class(self.profile.driver) if self.profile.driver else None
        if hasattr(self.profile, "pacer"):
            self.pacing = self.open_model_pacing(now)
        elif hasattr(self.profile, "plan"):
            self.pacing = RoundsPacing(self.profile.plan)
        if not isinstance(self.pacing, FleetArrivals):  # the master's own agents: none
            set_pacing(self.environment, self.pacing)
        dropped = self.pacing.dropped if self.pacing else (lambda _now: 0)
        self.judge = LiveJudge(
            registry.build_thresholds(options), now, self.run_dir / schema.SAMPLES_CSV, dropped
        )
        self.recorder.listeners.append(self.judge.on_row)
        on_worker_cpu(self.environment, self.judge.observe_worker_cpu)
        self.meta["profile"] = {
            "name": self.profile.name,
            "params": _params(self.profile.params),
            "phases": self.phases,
        }
        self.save()
        gevent.spawn(self.judge_forever)

    def open_model_pacing(self, now: float) -> OpenModelPacing | FleetArrivals:
        """This process paces the arrivals; on a master, each worker paces its share and reports, from
        WORKER_SPAWN_LEAD_S on (the profile's first tick, the agent pool, holds until then)."""
        runner = self.environment.runner
        if not isinstance(runner, MasterRunner):
            return OpenModelPacing(self.profile.pacer(now))
        self.lead_s = WORKER_SPAWN_LEAD_S
        workers = runner.clients.ready + runner.clients.spawning + runner.clients.running
        share = self.profile.share_doc(len(workers), now + self.lead_s)
        for worker in workers:
            runner.send_message(SHARE_MESSAGE, share, client_id=worker.id)
        return FleetArrivals(self.environment)

    def judge_forever(self) -> None:
        while not self.closing:
            gevent.sleep(JUDGE_EVERY_S)
            bound_locust_history(self.environment)
            now = time.time()
            due = [r for r in self.judge.judge(now) if r.abort_due]
            if due and self.stop is None:
                self.note_breakpoint(due[0], now)
                self.request_stop(
                    f"threshold failed: {due[0].expr} (value {due[0].value})", exit_codes.THRESHOLD_FAILED
                )

    def note_breakpoint(self, result, now: float) -> None:
        if self.profile.name == "breakpoint":
            elapsed = now - self.meta.get("start_ts", now)
            point = breakpoint_stop_point(
                self.profile, elapsed, now, result.expr, self.environment.runner.user_count
            )
            self.meta["breakpoint"] = dataclasses.asdict(point)

    def record_outcome(self, now: float) -> None:
        """Thresholds' final verdicts, rounds, dropped arrivals and the run's validity, into run.json."""
        if self.judge is None:
            return
        self.judge.judge(now)
        self.meta["thresholds"] = [r.as_json() for r in self.judge.results]
        self.meta["validity"] = self.judge.validity()
        if isinstance(self.pacing, RoundsPacing):
            self.pacing.plan.stop(now)
            self.meta["profile"]["rounds"] = self.pacing.plan.boundaries()
        if isinstance(self.pacing, (OpenModelPacing, FleetArrivals)):
            self.meta["open_model"] = {
                "issued_arrivals": self.pacing.issued,
                "dropped_arrivals": self.pacing.dropped(now),
            }
        self.save()

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
                    log.warning(
                        "loadkit: sampler stopped (%s); the run goes on without it", event or "no reason"
                    )
                    self.sampler = None


def bound_locust_history(environment: Environment) -> None:
    """Keep Locust's per-second chart history to its last hour: it grows without bound otherwise
    (locust #2045), which an 8-hour soak would feel. Our own rows are on disk, complete."""
    history = environment.runner.stats.history if environment.runner else []
    if len(history) > LOCUST_HISTORY_KEEP:
        del history[: len(history) - LOCUST_HISTORY_KEEP]


def run_of(environment: Environment) -> KitRun | None:
    return _RUNS.get(environment)


def all_runs() -> list[KitRun]:
    return list(_RUNS.values())


def _params(params) -> dict:
    return dataclasses.asdict(params) if dataclasses.is_dataclass(params) else dict(params or {})


def setup(environment: Environment) -> KitRun | None:
    """Locust `init`: on a worker only a row buffer; on master/local the whole run. Bad input exits 2."""
    options = environment.parsed_options
    apply_gateway_preset(environment, options)
    if isinstance(environment.runner, WorkerRunner):
        check_config(options, distributed=True)  # --processes workers share the master's options
        Recorder(environment, None)
        report_own_cpu(environment)
        follow_master_share(environment)
        return None
    if options.headless:  # decide now: Locust fills in -u/-r defaults before the first tick
        options.load_profile = profile_name(options)
    check_config(options, distributed=isinstance(environment.runner, MasterRunner))
    options.run_id = options.run_id or rundir.new_run_id()
    run_dir = rundir.create_run_dir(options.run_dir, options.run_id)
    options.run_dir = str(run_dir)
    if not options.html_file:
        options.html_file = str(run_dir / schema.LOCUST_HTML)
    try:
        target = resolve_target(options)
    except (TargetError, KitInputError) as exc:
        fail_input(str(exc))
    environment.host = target.url
    meta = initial_meta(options, target)
    run = KitRun(environment, run_dir, meta, target, Recorder(environment, run_dir))
    run.users_csv = CsvAppender(run_dir / schema.USERS_CSV, schema.USER_COLUMNS)
    _RUNS[environment] = run
    set_run_link(
        environment,
        RunLink(
            target.pid, target.started_by_kit, lambda reason, code: run.request_stop(reason, code, now=True)
        ),
    )
    try:  # the remote rows' writer first: it writes samples.csv's header before the local sampler starts
        run.remote = start_remote_samplers(
            options.sampler_url, options.sampler_token_env, run_dir / schema.SAMPLES_CSV, meta, run.save
        )
        run.sampler = start_side_sampler(options, target, run_dir)
    except KitInputError as exc:
        stop_target(target)
        fail_input(str(exc))
    meta["sampler"] = {
        "interval_s": options.sample_interval,
        "pid": run.sampler.pid if run.sampler else None,
        "argv": run.sampler.args if run.sampler else None,
    }
    run.save()
    if environment.web_ui is not None:
        webui.install(environment.web_ui, run_dir / schema.SAMPLES_CSV)
    gevent.spawn(run.watch)
    if run.remote is not None:
        gevent.spawn(run.remote.run, lambda: run.closing, run.remote_target_exited)
    return run
