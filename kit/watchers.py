"""The run's watchers: greenlets that live until the run closes and ask it to stop when what they watch
says so. Target liveness (the process the kit started, the --target-pid processes, the health endpoint,
the sampler services' view of the target), the side sampler's health (its death is recorded, the run goes
on), the thresholds judged live (an abort that is due), the fleet's health (workers lost).

Each decides one thing and asks the run to stop (kit/stopping.py); none ends the run itself.
"""

from __future__ import annotations

import dataclasses
import logging
import subprocess
import time

import gevent
from locust.env import Environment
from locust.runners import MasterRunner

from contract import exit_codes, schema
from contract.csv_tail import last_sample_event
from contract.records import WorkerLoss
from contract.units import show
from kit.delivery import FleetWatch, loss_ends_run
from kit.live import LiveRun
from kit.liveness import CHECK_EVERY_S, NEVER_ANSWERED, Liveness, sampler_stop
from kit.load import Load
from kit.loop_lag import LoopLag
from kit.model_calls import ModelCalls
from kit.record import RunRecord
from kit.remote_sampler import RemoteSamplers
from kit.stopping import Stopping
from lifecycle.target import Target
from sampler.launch import stop_sampler

log = logging.getLogger("loadkit")
WATCH_EVERY_S = 0.5
JUDGE_EVERY_S = 1.0
LOCUST_HISTORY_KEEP = 3600  # entries, one a second


class Watchers:
    def __init__(
        self,
        environment: Environment,
        stopping: Stopping,
        record: RunRecord,
        target: Target,
        liveness: Liveness,
        sampler: subprocess.Popen | None,
        remote: RemoteSamplers | None,
    ) -> None:
        self.environment, self.stopping, self.record = environment, stopping, record
        self.target, self.liveness = target, liveness
        self.sampler = sampler  # None once it has died (or was never needed)
        self.remote = remote  # --sampler-url services
        self.load: Load | None = None  # the load's watchers start with it
        self.fleet: FleetWatch | None = None  # on a master: the workers it loses
        self.model_calls: ModelCalls | None = None  # the model's own log of the calls it answered
        self.loop_lag: LoopLag | None = None  # this process's event-loop lag probe

    def start(self) -> None:
        """The target's and the samplers' watchers and the event loop's lag probe, from the run's start."""
        self.loop_lag = LoopLag(self.record.run_dir, self.record.guarded)
        gevent.spawn(self._watch_target)
        gevent.spawn(self._watch_liveness)
        if self.model_calls is not None:
            self.model_calls.start()
        if self.remote is not None:
            gevent.spawn(self.remote.run, lambda: self.stopping.closing, self._remote_target_exited)

    def watch_load(self, load: Load, live: LiveRun) -> None:
        """The thresholds' watcher and, on a master, the fleet's, from the load's start."""
        self.load = load
        gevent.spawn(self._judge_forever, load, live)
        runner = self.environment.runner
        if isinstance(runner, MasterRunner):
            self.fleet = FleetWatch(runner, self.record.meta.get("start_ts", time.time()))
            gevent.spawn(self._watch_fleet, self.fleet)

    def close(self, now: float) -> None:
        """At the run's end: the samplers and the lag probe stopped, the workers lost since the last look
        recorded."""
        if self.loop_lag is not None:
            self.loop_lag.close()
        if self.sampler is not None:
            stop_sampler(self.sampler)
        if self.remote is not None:
            self.remote.close()
        if self.model_calls is not None:
            self.model_calls.close()
        if self.fleet is not None:
            self._note_losses(self.fleet.poll(now))

    # ---- target liveness ---------------------------------------------------------------------------
    def _watch_target(self) -> None:
        """The target's process (ours: its exit code; any: the sampler saw it go), and the sampler's."""
        while self.stopping.request is None:
            gevent.sleep(WATCH_EVERY_S)
            if self.stopping.closing:
                return
            code = self.target.exit_code()
            if code is not None:
                reason = f"target died mid-run (pid {self.target.pid}, exit code {code})"
                self.stopping.ask(reason, exit_codes.TARGET_DIED, now=True)
            elif self.sampler is not None and self.sampler.poll() is not None:
                self._sampler_died(self.sampler)

    def _watch_liveness(self) -> None:
        """The target gone, or its health check unanswered for a while."""
        try:
            while self.stopping.request is None and not self.stopping.closing:
                gevent.sleep(CHECK_EVERY_S)
                reason = self.liveness.dead(time.monotonic())
                if reason and not self.stopping.closing:
                    self._target_lost(reason)
        finally:
            self.liveness.close()

    def _target_lost(self, reason: str) -> None:
        """Dead mid-run (3), or never there at all: then the load was not delivered (7)."""
        if reason.startswith(NEVER_ANSWERED):
            self.stopping.ask(f"load not delivered: {reason}", exit_codes.LOAD_NOT_DELIVERED, now=True)
        else:
            self.stopping.ask(f"target died mid-run: {reason}", exit_codes.TARGET_DIED, now=True)

    def _remote_target_exited(self, host: str) -> None:
        reason = f"target exited mid-run (seen by the sampler service on {host})"
        self.stopping.ask(reason, exit_codes.TARGET_DIED, now=True)

    # ---- sampler health ----------------------------------------------------------------------------
    def _sampler_died(self, sampler: subprocess.Popen) -> None:
        """Its last row says the target exited: the run ends. Else the run goes on without samples and
        says where they stop (a full disk is the run's disk error)."""
        samples = self.record.samples_csv
        if last_sample_event(samples) == schema.SAMPLE_EVENT.target_exited:
            self.stopping.ask("target exited mid-run (seen by the sampler)", exit_codes.TARGET_DIED, now=True)
            return
        if sampler.returncode == exit_codes.DISK_ERROR:
            self.record.save()  # on a full disk this fails too: the kit's own line names the cause
            self.record.failed(f"cannot write {samples}: the sampler's write failed", said=True)
        stopped = sampler_stop(samples, sampler.returncode, self.record.meta.get("start_ts"))
        note = f"sampler stopped after {stopped['stopped_at_s']} s ({stopped['stopped_reason']})"
        log.warning("loadkit: %s; the run goes on without it", note)
        self.record.meta["sampler"].update(stopped)
        if self.load is not None:
            self.load.judge.samples_stopped(note)
        self.sampler = None
        self.record.save()

    # ---- thresholds ----------------------------------------------------------------------------------
    def _judge_forever(self, load: Load, live: LiveRun) -> None:
        """Every second: an aborting threshold that is due stops the run (a breakpoint records where)."""
        judge = load.judge
        while not self.stopping.closing:
            gevent.sleep(JUDGE_EVERY_S)
            bound_locust_history(self.environment)
            now = time.time()
            due = [(th, r) for th, r in zip(judge.rules, judge.judge(now), strict=True) if r.abort_due]
            if due and self.stopping.request is None:
                rule, result = due[0]
                start = self.record.meta.get("start_ts", now)
                if (point := load.stop_point(now, start, result.expr)) is not None:
                    self.record.meta["breakpoint"] = point
                live.aborted_expr = result.expr
                value = show(result.value, rule.value_unit)
                reason = f"threshold failed: {result.expr} (value {value})"
                self.stopping.ask(reason, exit_codes.THRESHOLD_FAILED)

    # ---- fleet health --------------------------------------------------------------------------------
    def _watch_fleet(self, watch: FleetWatch) -> None:
        while not self.stopping.closing:
            gevent.sleep(WATCH_EVERY_S)
            if not self.stopping.closing:
                self._note_losses(watch.poll(time.time()))

    def _note_losses(self, losses: list[WorkerLoss]) -> None:
        """Workers lost mid-run, into run.json and the log. A round cannot finish without the tasks a lost
        worker held, and with no worker left nothing runs: both end the run at once."""
        rounds = self.load.pacing.rounds_plan() if self.load is not None else None
        for loss in losses:
            code = exit_codes.LOAD_NOT_DELIVERED
            log.warning("loadkit: %s: the run ends with exit code %d", loss.text(), code)
            self.record.meta.setdefault("workers_lost", []).append(dataclasses.asdict(loss))
            self.record.save()
            reason = loss_ends_run(loss, rounds, none_left=self.fleet is not None and self.fleet.none_left)
            if reason and not self.stopping.closing:  # once closing, the record says what was lost
                self.stopping.ask(reason, code, now=True)


def bound_locust_history(environment: Environment) -> None:
    """Keep Locust's per-second chart history to its last hour: it grows without bound otherwise
    (locust #2045), which an 8-hour soak would feel. Our own rows are on disk, complete."""
    history = environment.runner.stats.history if environment.runner else []
    if len(history) > LOCUST_HISTORY_KEEP:
        del history[: len(history) - LOCUST_HISTORY_KEEP]
