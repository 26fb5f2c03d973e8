"""The runs of a Locust process: Locust's `init` (settings converted once; on a worker, its side of the
fleet protocol; on a master or alone, the target and the first run), each later start in the web UI
(a new run), and a worker's test start (its agents' settings again, from the master's options).

Starting only: what a run is and does is kit/runtime.py's; any KitError before load exits here (`fail`)
with one line and its exit code, leaving nothing behind.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import signal
import sys
from pathlib import Path
from typing import NoReturn

from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from agents.base import warm_up_http
from agents.run_context import context_of, new_context
from agents.run_link import RunLink
from contract import exit_codes, schema
from contract.csv_append import RunFileError
from contract.errors import DiskError, KitError, one_line
from kit import finish, fleet, input_checks, rundir, signals, startup_signals, webui, worker_spawn
from kit.disk import DiskGuard
from kit.judge import refuse_short_trends
from kit.mcp_start import check_mcp_mix
from kit.remote_sampler import start_remote_samplers
from kit.rows import RowRecorder
from kit.runtime import KitRun, run_of
from kit.session import Session
from kit.settings import RUNS_ROOT, KitSettings, options_of, read_settings, refresh
from kit.startup import (
    check_sampler_options,
    choose_agents,
    fail,
    initial_meta,
    refuse_distributed,
    refuse_ignored_options,
    register_secrets,
    resolve_target,
    start_side_sampler,
    stop_forked_workers,
    warn_before_load,
)
from lifecycle.target import Target, stop_target

log = logging.getLogger("loadkit")
YOUNG_OBJECTS = 10_000  # allocations between two passes over the collector's youngest generation


def setup(environment: Environment) -> KitRun | None:
    """Locust `init`: settings converted once; on a worker only those, a row buffer and the fleet
    protocol; on master/local the target and the first run."""
    options = options_of(environment)
    try:
        settings = read_settings(options, options.run_id or rundir.new_run_id())
        choose_agents(environment, settings)
    except KitError as exc:
        fail(exc)
    warm_up_http()
    register_secrets(settings)
    runner = environment.runner
    if isinstance(runner, WorkerRunner):
        leave_if_signalled()
    if isinstance(runner, (MasterRunner, WorkerRunner)):
        try:  # --processes workers share the master's options: they refuse too
            refuse_distributed(settings)
        except KitError as exc:
            fail(exc)
    if isinstance(runner, WorkerRunner):
        worker_spawn.install()  # before the first spawn message: it would cost a parser build per option
        new_context(environment, settings.agent)  # a worker's one context: its runs come from the master
        RowRecorder(environment, None)
        fleet.follow_master(environment)
        settle_heap()
        return None
    try:
        refuse_ignored_options(settings)
        refuse_short_trends(settings)
        check_sampler_options(settings)
        input_checks.run_dir(settings.run_dir, settings.named.reuse_run_dir)
        if settings.named.run_dir is None:
            input_checks.under_root(settings.run_dir, RUNS_ROOT)
        master = fleet.Fleet(environment, runner) if isinstance(runner, MasterRunner) else None
    except KitError as exc:
        fail(exc)
    session = Session(start_or_find_target(settings), settings.named, master)
    warn_before_load(settings, options.expect_workers if master is not None else 1)
    environment.host = session.target.url
    try:
        check_mcp_mix(settings, session.target)  # before the run directory: a refused mix leaves none
        run = begin_run(environment, settings, session)
    except KitError as exc:
        stop_target(session.target)
        fail(exc)
    if environment.web_ui is not None:
        webui.install(
            environment.web_ui,
            session,
            lambda: _current(environment).live,
            lambda users, spawn_rate: _current(environment).edit(users, spawn_rate),
            lambda options: refresh(_current(environment).settings, options),
        )
        webui.warn_if_exposed(options.web_host)
    # in the web UI a signal ends the process as --autoquit does: the web server stops, then Locust's
    # shutdown runs (quitting, its HTML report, quit)
    web_ui = environment.web_ui
    signals.install(lambda: run_of(environment), web_ui.stop if web_ui is not None else None)
    settle_heap()
    return run


def leave_if_signalled() -> None:
    """A worker forked after the locustfile's first line: Python's own handlers back (Locust stops its
    workers with SIGINT), and a signal it received meanwhile ends it now, with that signal's exit code."""
    startup_signals.restore_defaults()
    if (received := startup_signals.startup_signal()) is not None:
        sys.exit(exit_codes.INTERRUPTED[signal.Signals(received)])


def start_or_find_target(settings: KitSettings) -> Target:
    """The target, started (or found) unless a signal came first; a signal during its start-up stops it
    (the health wait looks between polls) and ends the process with the run's record."""
    target = None
    try:
        if startup_signals.startup_signal() is None:
            target = resolve_target(settings, lambda: startup_signals.startup_signal() is not None)
    except KitError as exc:
        if startup_signals.startup_signal() is None:
            fail(exc)
    if startup_signals.startup_signal() is not None or target is None:
        interrupted_at_start(settings, target)
    return target


def interrupted_at_start(settings: KitSettings, target: Target | None) -> NoReturn:
    """A signal before the run began: what was started is stopped, run.json says why (and the report as
    far as an empty run allows), the process ends with the signal's exit code."""
    received = signal.Signals(startup_signals.startup_signal() or signal.SIGTERM)
    code = exit_codes.INTERRUPTED[received]
    meta = initial_meta(settings, target or Target(url=settings.target.host or ""))
    if target is not None:
        meta["target"]["exit_code"] = stop_target(target)
    reason = f"interrupted by {received.name} during start-up"
    meta |= {"interrupt": startup_signals.startup_interrupt(), "stop_reason": reason}
    meta |= {"ended_early": True, "exit_code": code}
    run_dir = rundir.create_run_dir(settings.run_dir)
    try:
        rundir.write_run_json(run_dir, meta)
        meta["report"] = finish.start_report(run_dir).get().as_json(run_dir)
        rundir.write_run_json(run_dir, meta)
    except RunFileError as exc:
        sys.stderr.write(f"loadkit: error: {one_line(exc)}\n")
    sys.stderr.write(f"loadkit: {reason}: no load ran; {run_dir / schema.RUN_JSON} says so\n")
    stop_forked_workers()
    sys.exit(code)


def _current(environment: Environment) -> KitRun:
    run = run_of(environment)
    assert run is not None  # the first run began at init
    return run


def settle_heap() -> None:
    """What exists once the kit is set up (modules, classes, settings: ~70,000 objects) lives as long as
    the process: moved out of the collector's sight (gc.freeze), so a full collection walks only what the
    load made. Walking it all held the event loop 80-200 ms per full collection at 100 streams here, every
    reply waiting meanwhile (TTFT p50 +25 ms over raw httpx's). The youngest generation is then collected
    after YOUNG_OBJECTS allocations, not 700: a request's objects live as long as its stream (~0.5 s), so at
    700 every pass found the streams in flight alive and moved them on, to be walked again by the older
    generations' passes (at 100 streams 250-270 young, 23-25 middle and 2-3 full passes in 20 s, the full
    ones 38-65 ms); with room for a few requests' worth, most die before the next pass (0-1 in 20 s)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_OBJECTS, *gc.get_threshold()[1:])


def begin_run(environment: Environment, settings: KitSettings, session: Session) -> KitRun:
    """A run of the session: its id and directory (created here, once), run.json, row files, side
    sampler and watchers. Raises KitError when the sampler refuses to start."""
    options = options_of(environment)
    run_id, run_dir = session.next_run(settings.run_id, settings.run_dir)
    settings = dataclasses.replace(settings, run_id=run_id, run_dir=run_dir)
    options.run_id = run_id  # what the master's workers are sent: their agents' session names carry it
    options.html_file = session.named.html_file or str(run_dir / schema.LOCUST_HTML)  # Locust's own option
    target = session.target
    meta = initial_meta(settings, target)
    disk = reserve_disk(run_dir, meta)
    samples = run_dir / schema.SAMPLES_CSV  # the remote rows' writer first: it writes the header
    urls, token_env = list(settings.agent.sampler_url), settings.agent.sampler_token_env
    try:
        remote = start_remote_samplers(
            urls, token_env, samples, meta, lambda: _current(environment).record.save()
        )
        sampler = start_side_sampler(settings, target)
    except KitError:
        disk.release()  # refused: the run leaves no reserve behind, nor a directory it made
        session.discard(run_id)
        raise
    run = KitRun(environment, settings, session, meta, disk, (sampler, remote))
    stopping = run.stopping
    run.context.link = RunLink(
        target.pid,
        target.started_by_kit,
        lambda reason, code: stopping.ask(reason, code, now=True, planned=code is None),
        stopping=lambda: stopping.request is not None,
        target_dead=lambda: stopping.target_died,
    )
    meta["sampler"] = {
        "interval_s": settings.target.sample_interval,
        "pid": sampler.pid if sampler else None,
        "argv": sampler.args if sampler else None,
    }
    run.record.save()
    run.watchers.start()
    return run


def run_for_tick(environment: Environment) -> KitRun | None:
    """The run a shape tick drives: after a finished run, a new start in the web UI begins the next."""
    run = run_of(environment)
    if run is not None and run.ending is not None and not run.session.quitting:
        try:
            run = begin_run(environment, run.settings, run.session)
        except KitError as exc:
            log.error("loadkit: the run could not start: %s", one_line(exc))
            return None
        if environment.shape_class is not None:  # the profile's clock starts once its sampler runs
            environment.shape_class.reset_time()
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


def on_worker_test_start(environment: Environment) -> None:
    """A worker's test starts with the master's options (Locust sends them): its agents' settings again;
    under rounds, its agents take only the tasks the master grants."""
    if run_of(environment) is None and isinstance(environment.runner, WorkerRunner):
        options = options_of(environment)
        try:
            settings = read_settings(options, options.run_id or "no-run-id")
        except KitError as exc:
            fail(exc)
        context_of(environment).settings = settings.agent
        if settings.built_profile.runs_in_rounds:
            fleet.expect_round_grants(environment)
