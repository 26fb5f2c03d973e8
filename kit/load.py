"""A run's load, built whole at its first tick: the profile (from the settings as they are at the start:
the web UI form may have changed them), what paces its agents (here or across the workers), the live
judge, the driver agent a profile names, and the lead its clock starts with. Answers the shape's ticks
and lays out what run.json and users.csv record of the load.

Builds and asks the profile; it never names or types it. Stopping and recording are the run's.
"""

from __future__ import annotations

import dataclasses

from locust.env import Environment

from agents import presets
from agents.run_context import context_of
from agents.settings import AgentSettings
from contract import schema
from contract.schema import USER
from kit.fleet import Fleet
from kit.judge import LiveJudge
from kit.rows import RowRecorder
from kit.settings import KitSettings
from scenarios.breakpoint import stop_point
from scenarios.pacing import Pacing, pacing_for
from scenarios.profile import params_of
from scenarios.shape import Tick

WORKER_SPAWN_LEAD_S = 5.0  # distributed open model: workers spawn the agent pool before arrivals start
LOCAL_SPAWN_LEAD_S = 2.0  # one process: the pool spawns and runs its on_start before the first arrival


class Load:
    def __init__(
        self, environment: Environment, settings: KitSettings, fleet: Fleet | None, now: float
    ) -> None:
        """`fleet`: a master's side of the fleet protocol; the profile is the one the settings built
        (kit/settings.py: a web-UI run's are read anew before its load, so its profile is its own)."""
        self.environment = environment
        self.settings = settings
        self.profile = profile = settings.built_profile
        self.driver_class = presets.resolve_class(profile.driver) if profile.driver else None
        lead = WORKER_SPAWN_LEAD_S if fleet is not None else LOCAL_SPAWN_LEAD_S
        self.lead_s = lead if profile.spawns_pool_first else 0.0  # arrivals wait for the pool to spawn
        self.start_ts = now + self.lead_s  # the profile's clock: the pacers start here
        schedule = profile.paced_by(self.start_ts)
        self.judge = LiveJudge(
            list(settings.thresholds), now, settings.run_dir / schema.SAMPLES_CSV, self.dropped, settings.slos
        )
        self.pacing: Pacing
        if fleet is not None:
            self.pacing = fleet.start_run(profile, schedule, self.start_ts, self.judge.observe_worker_cpu)
        else:
            self.pacing = pacing_for(schedule)
            context_of(environment).pacing = self.pacing

    def listen(self, recorder: RowRecorder) -> None:
        """Rows feed the judge (and a sweep's closed passes, which measure its rates; a fit's steps, which
        hear the sampler's rows too)."""
        recorder.listeners.extend(self.pacing.row_listeners())
        self.judge.sample_listeners.extend(self.pacing.row_listeners())
        recorder.listeners.append(self.judge.on_row)

    def dropped(self, now: float) -> int:
        return self.pacing.dropped(now)

    def tick(self, elapsed_s: float) -> Tick | None:
        return self.profile.tick(max(0.0, elapsed_s - self.lead_s))

    def for_locust(self, tick: Tick) -> tuple:
        """What KitShape.tick() returns: rounds run only the agents that work tasks; a profile's own driver
        (capacity, churn) runs alone."""
        if self.pacing.task_agents_only:
            task_agents = [c for c in self.environment.user_classes if getattr(c, "task_agent", False)]
            return (*tick.as_locust(), task_agents or None)
        if self.driver_class is not None:
            if self.driver_class not in self.environment.user_classes:
                self.environment.user_classes.append(self.driver_class)
            return (*tick.as_locust(), [self.driver_class])
        return tick.as_locust()

    def users_row(self, tick: Tick, now: float) -> dict:
        """users.csv's row: agents running and asked for, the phase; arrivals issued and dropped so far
        (empty cells in a closed model)."""
        row = {
            "ts": now,
            "users": user_count(self.environment),
            USER.target_users: tick.users,
            "phase": tick.phase,
        }
        if (arrivals := self.pacing.arrivals(now)) is not None:
            row |= {USER.arrivals_issued: arrivals.issued, USER.arrivals_dropped: arrivals.dropped}
        return row

    def meta(self, phases: list[dict]) -> dict:
        """run.json at the load's start: the profile, its arrivals, the workload and the SLOs."""
        profile = self.profile
        meta = {
            "profile": {"name": profile.name, "params": params_of(profile), "phases": phases},
            "workload": self.settings.agent.workload.describe() | replayed(self.settings.agent),
            "slos": [slo.as_json() for slo in self.settings.slos],
        }
        if (arrivals := profile.arrivals_asked(self.start_ts)) is not None:
            meta["open_model"] = arrivals
        return meta

    def stop_point(self, now: float, start_ts: float, expr: str) -> dict | None:
        """run.json "breakpoint": where an aborting threshold stopped a profile that records it."""
        if not self.profile.records_stop_point:
            return None
        point = stop_point(self.profile, now - start_ts, now, expr, user_count(self.environment))
        return dataclasses.asdict(point)

    def outcome(self, meta: dict, now: float) -> None:
        """Into run.json at the end: the thresholds' final verdicts, the workers' CPU, the rounds'
        boundaries, the arrivals issued and dropped (a sweep's rate curve as its passes measured it), the
        sweep's passes."""
        judge = self.judge
        judge.judge(now, final=True)
        meta["thresholds"] = judge.as_json()
        meta["allow_unjudged"] = self.settings.profile.allow_unjudged
        if workers := judge.workers_cpu_p90():
            meta["workers_cpu_p90"] = workers  # read by the validity rule at the end (kit/end_checks.py)
        if (arrivals := self.pacing.arrivals(now)) is not None:
            asked = self.profile.arrivals_asked(self.start_ts) or {}
            meta["open_model"] = asked | {
                "issued_arrivals": arrivals.issued,
                "dropped_arrivals": arrivals.dropped,
                "first_dropped_ts": arrivals.first_dropped_ts,
            }
        self.pacing.record_end(meta, now)


def user_count(environment: Environment) -> int:
    return environment.runner.user_count if environment.runner else 0


def await_ramped_down(environment: Environment) -> None:
    """A profile that ends at 0 agents: those its last ramp-down killed between tasks may still be in
    their on_stop (deleting their session, writing its row). Locust no longer counts a killed agent, and
    its stop waits only for the agents it counts: the run would close its row files under them and the
    process quit with their sessions open. Waited for here, up to the stop-timeout."""
    runner = environment.runner
    if runner is not None and not sum(runner.user_classes_count.values()):
        runner.user_greenlets.join(timeout=environment.stop_timeout or 0)  # none set: no grace, as Locust


def replayed(agent: AgentSettings) -> dict:
    """run.json's record of a replay (--sessions): the file, its sessions and calls, speed, copies and
    whose tool results it sent (the recording's, or live ones: --live-tools)."""
    if agent.sessions is None:
        return {}
    copies = "identical" if agent.identical_copies else "tagged"
    tools = "live" if agent.live_tools else "recorded"
    return {
        "sessions": agent.sessions.describe()
        | {"speed": agent.sessions_speed, "copies": copies, "tools": tools, "stream": agent.sessions_stream}
    }
