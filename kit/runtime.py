"""One kit run inside a Locust process, from `init` to `quit`: run directory, target, side sampler,
recorder, stop reasons, run.json, and the end-of-run report and summary.

The locustfile only forwards Locust's events here. Load shapes live in scenarios/, protocols in agents/,
tables in analysis/; this module wires them and owns no measurement math.
"""

from __future__ import annotations

import csv
import dataclasses
import logging
import re
import shlex
import subprocess
import sys
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path

import gevent
from locust.env import Environment
from locust.runners import WorkerRunner
from locust.stats import PERCENTILES_TO_REPORT, StatsCSV

from analysis.prices import PriceTableError, load_prices
from kit import exit_codes, gateways, rundir, schema, webui
from kit.csv_append import CsvAppender
from kit.judge import LiveJudge
from kit.pacing import OpenModelPacing, RoundsPacing, set_pacing
from kit.recorder import Recorder
from kit.target import (
    Target,
    TargetError,
    free_port,
    simulator_command,
    start_target,
    stop_target,
    target_command,
)
from sampler.launch import start_sampler, stop_sampler
from sampler.options import SamplerOptions, UsageError
from scenarios import registry
from scenarios.breakpoint import stop_point as breakpoint_stop_point
from scenarios.errors import ProfileConfigError, ThresholdConfigError
from scenarios.evaluator import exit_code as exit_code_of

log = logging.getLogger("loadkit")
logging.getLogger("httpx").setLevel(logging.WARNING)  # one INFO line per request would drown Locust's
WATCH_EVERY_S = 0.5
JUDGE_EVERY_S = 1.0
TREE_REFRESH_MIN_S = 0.5  # re-finding the target's processes costs ~3 ms (FIELD-NOTES)
LOCUST_HISTORY_KEEP = 3600  # entries, one a second
_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class KitInputError(Exception):
    """Bad input found before any load started; the message is one line for the user."""


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
    stop: StopRequest | None = None
    phases: list[dict] = field(default_factory=list)
    profile: object | None = None  # a scenarios Profile, built at the first tick from the (UI) options
    closing: bool = False  # set at quitting: from then on a stopped sampler or target is expected
    pacing: OpenModelPacing | RoundsPacing | None = None
    judge: LiveJudge | None = None
    users_csv: CsvAppender | None = None

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
        tick = self.profile.tick(elapsed_s)
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
        target = tick.as_locust()
        for user_class in target[2] if len(target) == 3 else ():  # a profile's own driver (capacity)
            if user_class not in self.environment.user_classes:
                self.environment.user_classes.append(user_class)
        return target

    def start_profile(self) -> None:
        """Build the profile and thresholds from the options as they are at start (the web UI form may
        have changed them), and the pacing and live judge they need."""
        options = self.environment.parsed_options
        now = time.time()
        self.profile = registry.build_profile(profile_name(options), options)
        if hasattr(self.profile, "pacer"):
            self.pacing = OpenModelPacing(self.profile.pacer(now))
        elif hasattr(self.profile, "plan"):
            self.pacing = RoundsPacing(self.profile.plan)
        set_pacing(self.environment, self.pacing)
        dropped = self.pacing.dropped if self.pacing else (lambda _now: 0)
        self.judge = LiveJudge(
            registry.build_thresholds(options), now, self.run_dir / schema.SAMPLES_CSV, dropped
        )
        self.recorder.listeners.append(self.judge.on_row)
        self.meta["profile"] = {
            "name": self.profile.name,
            "params": _params(self.profile.params),
            "phases": self.phases,
        }
        self.save()
        gevent.spawn(self.judge_forever)

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
        if isinstance(self.pacing, OpenModelPacing):
            self.meta["open_model"] = {
                "issued_arrivals": self.pacing.pacer.issued,
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


def profile_name(options) -> str:
    """--load-profile; else Locust's own --profile label when it names one of ours; else Locust's
    -u/-r/-t (the web UI form sets them) drive the manual profile; else a bounded smoke run."""
    if getattr(options, "load_profile", None):
        return options.load_profile
    label = getattr(options, "profile", None)
    if label in registry.PROFILE_NAMES:
        return label
    if options.num_users or options.run_time:
        return "manual"
    return "smoke"


def all_runs() -> list[KitRun]:
    return list(_RUNS.values())


def _params(params) -> dict:
    return dataclasses.asdict(params) if dataclasses.is_dataclass(params) else dict(params or {})


def setup(environment: Environment) -> KitRun | None:
    """Locust `init`: on a worker only a row buffer; on master/local the whole run. Bad input exits 2."""
    options = environment.parsed_options
    apply_gateway_preset(environment, options)
    if isinstance(environment.runner, WorkerRunner):
        Recorder(environment, None)
        return None
    if options.headless:  # decide now: Locust fills in -u/-r defaults before the first tick
        options.load_profile = profile_name(options)
    try:  # every config error surfaces here, before any load or process starts
        registry.build_profile(profile_name(options), options)
        registry.build_thresholds(options)
        if options.prices:
            load_prices(options.prices)
    except (ProfileConfigError, ThresholdConfigError, PriceTableError) as exc:
        fail_input(str(exc))
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
    try:
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
    return run


def apply_gateway_preset(environment: Environment, options) -> gateways.GatewayPreset:
    """Fill unset options from the --gateway preset and run its agent classes, unless the command line
    named classes itself (Locust's positional user classes win)."""
    try:
        chosen = gateways.preset(options.gateway)
        classes = gateways.agent_classes(chosen)
    except gateways.GatewayError as exc:
        fail_input(str(exc))
    if options.health_path is None:
        options.health_path = chosen.health_path
    options.session_header = options.session_header or chosen.session_header
    options.api_key_env = options.api_key_env or chosen.api_key_env
    for name, value in chosen.defaults.items():
        if getattr(options, name, None) is None:
            setattr(options, name, value)
    if not options.user_classes:
        environment.user_classes[:] = classes
    return chosen


def fail_input(message: str) -> None:
    sys.stderr.write(f"loadkit: error: {message}\n")
    sys.exit(exit_codes.BAD_INPUT)


def resolve_target(options) -> Target:
    """--host alone: a running gateway; --target-cmd: start one; neither: start the simulator. ACP
    agents are processes the agents launch themselves: no URL."""
    if options.gateway == "acp":
        if not options.acp_command:
            raise KitInputError(
                '--gateway acp needs --acp-command "COMMAND" (the agent each simulated agent runs)'
            )
        return Target(url="")
    if options.host and not options.target_cmd:
        return Target(url=options.host.rstrip("/"))
    port = free_port()
    url = (options.host or "http://127.0.0.1:{port}").replace("{port}", str(port)).rstrip("/")
    if options.target_cmd:
        command = target_command(options.target_cmd, port)
    elif options.gateway == "simulator":
        command = simulator_command(port, options.sim_args)
    else:
        raise KitInputError(f"--gateway {options.gateway} needs --host URL or --target-cmd")
    return start_target(command, url, options.health_path, options.start_timeout)


def sampler_options(options, target: Target, run_dir: Path) -> SamplerOptions | None:
    """What the side sampler watches; None when nothing names a target process (remote gateway)."""
    pids = ([target.pid] if target.pid else []) + list(options.target_pid or [])
    matches = list(options.target_match or [])
    if options.gateway == "acp" and not matches:
        matches = [acp_pattern(options.acp_command)]  # the agents' own child processes
    if not (pids or matches or options.target_cgroup):
        return None
    queue_url, queue_field, inflight_field = queue_probe(options, target)
    return SamplerOptions(
        out=str(run_dir / schema.SAMPLES_CSV),
        pids=pids,
        matches=matches,
        cgroups=list(options.target_cgroup or []),
        interval=options.sample_interval,
        pss_every=options.pss_every,
        tree_refresh_s=max(options.sample_interval, TREE_REFRESH_MIN_S),
        queue_url=queue_url if queue_field else None,
        queue_field=queue_field if queue_url else None,
        inflight_field=inflight_field if queue_url else None,
        sidecar_pids=list(options.sidecar_pid or []),
        sidecar_matches=list(options.sidecar_match or []),
        wait_for_target=not pids and options.gateway == "acp",
    )


def queue_probe(options, target: Target) -> tuple[str | None, str | None, str | None]:
    """--queue-url and fields as given, else the preset's probe on the target."""
    if options.queue_url:
        return options.queue_url, options.queue_field, options.inflight_field
    probe = gateways.preset(options.gateway).queue
    if probe is None or not target.url:
        return None, None, None
    return f"{target.url}{probe.path}", probe.queue_field, probe.in_progress_field


def acp_pattern(command: str) -> str:
    """A regex for the ACP agent processes: their arguments (an interpreter path may be rewritten by
    shims), or the program's name when it has none."""
    words = shlex.split(command)
    return re.escape(" ".join(words[1:])) if len(words) > 1 else re.escape(Path(words[0]).name)


def start_side_sampler(options, target: Target, run_dir: Path) -> subprocess.Popen | None:
    """Start the side sampler and wait for its first row; fail with one line if it refuses to run."""
    sampler_opts = sampler_options(options, target, run_dir)
    if sampler_opts is None:
        log.warning("loadkit: no --target-pid/--target-match/--target-cgroup: target resources not sampled")
        return None
    try:
        popen = start_sampler(sampler_opts, stderr=subprocess.PIPE)
    except UsageError as exc:
        raise KitInputError(f"sampler: {exc}") from None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and popen.poll() is None and not Path(sampler_opts.out).exists():
        time.sleep(0.05)
    if popen.poll() is not None and popen.returncode != 0:
        lines = popen.stderr.read().decode(errors="replace").strip().splitlines() or ["exited"]
        raise KitInputError(f"sampler: {lines[-1]}")
    gevent.spawn(_relay_stderr, popen)
    return popen


def _relay_stderr(popen: subprocess.Popen) -> None:
    for raw in popen.stderr:
        line = raw.decode(errors="replace")
        sys.stderr.write(line if line.startswith("sampler") else f"sampler: {line}")


def initial_meta(options, target: Target) -> dict:
    return {
        "run_id": options.run_id,
        "kit_version": rundir.KIT_VERSION,
        "created_ts": time.time(),
        "command": rundir.command_line(),
        "versions": rundir.versions(),
        "host": rundir.host_facts(),
        "target": {
            "url": target.url,
            "gateway": options.gateway,
            "started_by_kit": target.started_by_kit,
            "command": target.command,
            "pid": target.pid,
        },
        "profile": {},
        "thresholds": [],
        "cost": {
            "prices": str(Path(options.prices).resolve()) if options.prices else None,
            "host_price_month": options.host_price,
        },
    }


def last_sample_event(path: Path) -> str | None:
    """The `event` cell of the last complete row of samples.csv, if any."""
    try:
        with open(path, newline="", encoding="utf-8") as file:
            rows = list(csv.DictReader(file))
    except OSError:
        return None
    return (rows[-1].get("event") or None) if rows else None


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


def print_report_and_summary(run_dir: Path) -> None:
    # late imports: analysis is heavy (pandas, matplotlib) and only needed at the end
    from analysis.load import load_run
    from analysis.report import write_report
    from analysis.summary import console_summary

    try:
        write_report(run_dir)
    except Exception as exc:  # noqa: BLE001 - a failed report must not hide the summary or the rows
        sys.stderr.write(f"loadkit: report not written: {type(exc).__name__}: {exc}\n")
    print(console_summary(load_run(run_dir)), flush=True)
