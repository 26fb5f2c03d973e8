"""The serial capacity and churn drivers (the study): one Locust user runs the whole protocol itself, as
fast as the target allows, reading target memory from outside after every step into capacity.csv.

Not paced by LoadTestShape ticks (once a second). Computes nothing beyond the stop checks; the figures
come from analysis/capacity.py. The session protocol comes from the gateway preset or the spec file
(agents/capacity/idle_sessions.py); any stop closes every session the run opened, and only those.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable
from typing import NoReturn

import gevent
from locust import constant, task
from locust.exception import StopUser

from agents import presets
from agents.base import KitAgent
from agents.capacity.idle_sessions import (
    CONNECTION_FRESH,
    AcpSessions,
    LaunchingClient,
    Opened,
    RestSessionClient,
    close_and_record,
    session_http_client,
)
from agents.gateways.spec import SessionSteps
from agents.run_context import context_of
from agents.settings import AgentSettings
from agents.shield import shielded
from contract import exit_codes, schema
from contract.csv_append import CsvAppender
from contract.errors import InputError
from contract.records import AgentRecord
from contract.schema import (
    AGENT_EVENT,
    CAPACITY,
    CAPACITY_EVENT,
    STOP_BUDGET,
    STOP_CAP,
    STOP_CHURN_DONE,
    STOP_FAILURE,
    STOP_INTERRUPTED,
    STOP_TARGET_DIED,
)
from sampler.memory_probe import MemoryProbe, MemoryReading
from sampler.selection import Scope
from sampler.service_client import RemoteMemoryProbe, ServiceClient, ServiceError
from sampler.targets import CgroupSelector, PatternSelector, Selector, Target, TargetNotFound, TreeSelector

log = logging.getLogger("loadkit")

NO_REFRESH_S = 1e9  # the probe re-finds processes itself, once per step


class ProbeError(InputError):
    """The target's processes cannot be found or read; the message is one line."""


class LaunchedSelector:
    """The processes the driver launched itself (ACP agents, MCP stdio servers): a target that may be
    empty at baseline."""

    label = "the stdio processes this run launched"

    def __init__(self, pids: Callable[[], set[int]]) -> None:
        self._pids = pids

    def pids(self) -> set[int]:
        return self._pids()

    def gone(self, live: set[int]) -> bool:
        return False


def probe_for(
    pids: list[int],
    matches: list[str],
    cgroups: list[str],
    sidecar_pids: list[int],
    sidecar_matches: list[str],
    launched: LaunchedSelector | None = None,
    scope: Scope | None = None,
) -> MemoryProbe:
    """A probe over the target selectors, sidecars excluded from the target and read apart; `scope`:
    which of the patterns' matches count (default: this process's tree never does)."""
    scope = scope or Scope(kit_root=os.getpid(), kit_targets=frozenset(pids))
    kit = dataclasses.replace(Scope(match_all=True), kit_root=scope.kit_root, kit_targets=scope.kit_targets)
    try:
        sidecar_sel: list[Selector] = [TreeSelector(p) for p in sidecar_pids]
        sidecar_sel += [PatternSelector(m, scope=kit) for m in sidecar_matches]
        sidecar = Target(sidecar_sel, NO_REFRESH_S) if sidecar_sel else None
        selectors = (
            [TreeSelector(p) for p in pids]
            + [PatternSelector(m, scope=scope) for m in matches]
            + [CgroupSelector(c) for c in cgroups]
            + ([launched] if launched else [])
        )
        if not selectors:
            raise ProbeError(NO_TARGET)
        exclude = (lambda: sidecar.pids) if sidecar else set
        target = Target(selectors, NO_REFRESH_S, exclude=exclude, allow_empty=launched is not None)
        return MemoryProbe(target, sidecar)
    except TargetNotFound as exc:
        raise ProbeError(str(exc)) from None


def match_scope(settings: AgentSettings, pids: list[int]) -> Scope:
    """--target-match's scope in the load generator itself: the user's choices; this process's tree
    (its forks before exec carry its command line) is the kit's, save the started gateway's."""
    return Scope(
        settings.target_user,
        settings.target_cwd,
        settings.target_env,
        settings.target_match_all,
        kit_root=os.getpid(),
        kit_targets=frozenset(pids),
    )


def remote_probe(urls: list[str], token_env: str) -> RemoteMemoryProbe:
    """A probe through the one sampler service watching the target; ProbeError if it cannot read."""
    if len(urls) != 1:
        raise ProbeError(f"capacity judges one target: give exactly one --sampler-url, got {len(urls)}")
    probe = RemoteMemoryProbe(ServiceClient(urls[0], os.environ.get(token_env, ""), time.time))
    try:
        probe.read(with_pss=False)
    except ServiceError as exc:
        probe.close()
        raise ProbeError(f"sampler service: {exc}") from None
    return probe


NO_TARGET = (
    "capacity and churn read the target's memory: name its processes with --target-pid, "
    "--target-match or --target-cgroup, or let the kit start it (--target-cmd)"
)


class SerialDriver(KitAgent):
    """Shared plumbing of the capacity and churn users: options, probe, session client, capacity.csv,
    the stop watch, closing every session this run opened."""

    abstract = True
    wait_time = constant(0)
    profile_name = "capacity"
    warned = False  # the RSS-over-several-processes warning is given once

    @classmethod
    def refuse_unfit(
        cls, settings: AgentSettings, chosen: presets.GatewayPreset, kit_starts_target: bool
    ) -> None:
        """Before any load: InputError (one line) when this run cannot work: the gateway has no session
        protocol, or the target's memory cannot be read (no process named, none started by the kit or
        by its sessions: stdio processes are their own target)."""
        cls.protocol_of(settings, chosen)  # GatewayError when the gateway has no session protocol
        launches = presets.stdio_session_client(chosen, settings) is not None
        named = settings.target_pid or settings.target_match or settings.target_cgroup or settings.sampler_url
        if not (named or kit_starts_target or launches):  # launched processes are a target of their own
            raise InputError(NO_TARGET)

    @staticmethod
    def protocol_of(settings: AgentSettings, chosen: presets.GatewayPreset) -> SessionSteps | AcpSessions:
        return presets.session_protocol(chosen, settings.acp_sessions or "process")

    def memory_metric(self) -> str:
        """The memory judged against the budget: rss or pss (--capacity-metric)."""
        return self.settings.capacity.capacity_metric

    def on_start(self) -> None:
        """Not KitAgent's: the session client brings its own transport (HTTP with the connection mode,
        or the stdio of the processes it launches, which needs no URL)."""
        params = self.settings.capacity
        self.metric = self.memory_metric()
        self.budget_bytes = params.memory_budget_bytes
        self.max_agents = params.max_agents
        self.connection = self.settings.capacity_connection or CONNECTION_FRESH
        self.startup_clock = schema.STARTUP_CLOCK_THREAD  # stdio sessions: the loop (make_client)
        self.log: CsvAppender | None = None
        self.probe: MemoryProbe | RemoteMemoryProbe | None = None
        self.open_sessions: dict[str, int] = {}  # ours: session id -> n, closed at any stop
        self.stopping = False
        self.sessions: RestSessionClient | LaunchingClient | None = None
        self.environment.events.test_stopping.add_listener(self.on_test_stopping)
        self.listening = True
        try:
            self.sessions = self.make_client()
            self.sessions.start()
            self.probe = self.make_probe()
        except InputError as exc:  # an unknown gateway, no assistant, no target to read
            self.stop_run(f"{self.profile_name}: {exc}", exc.exit_code)
            return  # no StopUser here: Locust logs a traceback for any exception out of on_start
        self.log = CsvAppender(self.settings.run_dir / schema.CAPACITY_CSV, schema.CAPACITY_COLUMNS)

    def on_test_stopping(self, **_kwargs) -> None:
        """Any stop of the run (Ctrl-C, SIGTERM, the UI's STOP, a time limit): create nothing more."""
        self.stopping = True

    def on_stop(self) -> None:
        """Also reached when Locust kills the user (stop-timeout 0): whatever is still open is closed."""
        if getattr(self, "listening", False):
            self.environment.events.test_stopping.remove_listener(self.on_test_stopping)
            self.listening = False
        self.close_all()
        if self.sessions is not None:
            self.sessions.shutdown()
        if self.log is not None:
            self.log.close()
        if self.probe is not None:
            self.probe.close()
        super().on_stop()

    def make_client(self) -> RestSessionClient | LaunchingClient:
        chosen = presets.preset(self.settings.gateway)
        protocol = presets.session_protocol(chosen, self.settings.acp_sessions)
        launching = presets.stdio_session_client(chosen, self.settings)
        if launching is not None:
            self.connection = "stdio"  # no HTTP: start-up is the process's and its handshake's time
            self.startup_clock = schema.STARTUP_CLOCK_LOOP  # gevent's pipes live on the loop's hub
            return launching(self, protocol)
        assert isinstance(protocol, SessionSteps)  # ACP's sessions always launch (stdio_session_client)
        if not self.environment.host:
            raise ProbeError(f"gateway {chosen.name} needs --host URL (or --target-cmd)")
        self.http = session_http_client(self, self.connection)
        return presets.session_client(chosen)(self, protocol, self.connection)

    def make_probe(self) -> MemoryProbe | RemoteMemoryProbe:
        if self.settings.sampler_url:  # the target is on another host: its sampler service reads each step
            return remote_probe(list(self.settings.sampler_url), self.settings.sampler_token_env)
        link = context_of(self.environment).link
        own = [link.target_pid] if link is not None and link.target_pid else []
        launched = None
        if self.sessions is not None and not isinstance(self.sessions, RestSessionClient):
            launched = LaunchedSelector(self.sessions.pids)
        pids = own + list(self.settings.target_pid)
        return probe_for(
            pids,
            list(self.settings.target_match),
            list(self.settings.target_cgroup),
            list(self.settings.sidecar_pid),
            list(self.settings.sidecar_match),
            launched,
            match_scope(self.settings, pids),
        )

    def write(self, event: str, reading: MemoryReading | None, **fields) -> None:
        """One capacity.csv row, flushed at once (a crash loses nothing already measured)."""
        memory = {}
        if reading is not None:
            memory = {
                CAPACITY.rss_bytes: reading.rss_bytes,
                CAPACITY.pss_bytes: reading.pss_bytes,
                CAPACITY.uss_bytes: reading.uss_bytes,
                "procs": reading.procs,
                CAPACITY.sidecar_rss_bytes: reading.sidecar_rss_bytes,
            }
        assert self.log is not None  # made at on_start, before any step
        self.log.write(
            {
                "ts": time.time(),
                "event": event,
                "closed": 0,
                CAPACITY.budget_bytes: self.budget_bytes,
                "metric": self.metric,
                "connection": self.connection,
                CAPACITY.startup_clock: self.startup_clock,
                **memory,
                **fields,
            }
        )
        self.log.flush()

    @task
    def drive(self) -> None:
        """The whole protocol, once (the profile stops the run when it ends). A user whose on_start
        refused (no capacity.csv) stops quietly; a Ctrl-C inside the protocol closes ours first."""
        if self.log is None:
            raise StopUser()
        try:
            self.protocol()
        except KeyboardInterrupt:
            self.interrupted()
            raise

    def protocol(self) -> None:
        """The study's steps: capacity's ramp, churn's cycles."""
        raise NotImplementedError

    def session_client(self) -> RestSessionClient | LaunchingClient:
        assert self.sessions is not None  # made at on_start, or the user stopped there
        return self.sessions

    def read_memory(self, with_pss: bool = True) -> MemoryReading:
        assert self.probe is not None  # made at on_start, or the user stopped there
        return self.probe.read(with_pss)

    def judged_bytes(self, reading: MemoryReading) -> int | None:
        return reading.pss_bytes if self.metric == "pss" else reading.rss_bytes

    def create_session(self, n: int) -> tuple[str | None, float | None, str | None]:
        """Open one idle session tagged with the run id: (id, ready ms, error). A session that has an id
        but did not become ready is still ours to close.

        The create and its row are shielded (agents/shield.py): a kill of this agent mid-create (a second
        Ctrl-C stops every agent at once) waits for the create to land and its row to be written, up to
        the request timeout, so the session the gateway made is in agents.csv and on_stop closes it."""
        opened = shielded(lambda: self.open_and_record(n), self.settings.request_timeout)
        ok = opened.error is None
        return (opened.session_id if ok else None), opened.ready_ms, opened.error

    def open_and_record(self, n: int) -> Opened:
        opened = self.session_client().open(n)
        if opened.session_id is not None:
            self.open_sessions[opened.session_id] = n
        self.record(
            AgentRecord(
                ts=time.time(),
                agent_id=self.agent_id,
                n=n,
                session_id=opened.session_id,
                event=AGENT_EVENT.created if opened.error is None else AGENT_EVENT.failed,
                ready_ms=opened.ready_ms,
                error=opened.error,
            )
        )
        return opened

    def close_session(self, session_id: str) -> bool:
        self.open_sessions.pop(session_id, None)
        return close_and_record(self, self.session_client(), session_id)

    def close_all(self) -> None:
        """Close every session this run opened and has not closed (--no-cleanup keeps them)."""
        if not self.settings.cleanup or self.sessions is None:
            return
        shielded(self.close_each, self.settings.request_timeout)  # a kill mid-close still sends the rest

    def close_each(self) -> None:
        for session_id in list(self.open_sessions):
            self.close_session(session_id)

    def check_stopping(self, n: int) -> None:
        """Between steps: a run stopped from outside (a signal, the UI's STOP, a dead target) creates
        nothing more, records why, closes its own."""
        link = context_of(self.environment).link
        if self.stopping or (link is not None and link.stopping()):
            self.finish(STOP_INTERRUPTED, f"stopped from outside after {n} session(s)", None, request=False)

    def interrupted(self) -> None:
        """Ctrl-C can raise KeyboardInterrupt inside this user's greenlet (whichever runs when the signal
        lands), which Locust's User.run does not catch and on_stop never sees: close our own first."""
        self.stopping = True
        self.write(CAPACITY_EVENT.stop, None, detail=STOP_INTERRUPTED)
        self.close_all()

    def finish(self, code: str, message: str, exit_code: int | None, request: bool = True) -> NoReturn:
        self.write(CAPACITY_EVENT.stop, None, detail=code)
        if code != STOP_INTERRUPTED:
            log.warning("loadkit: %s: %s", self.profile_name, message)
        self.close_all()
        if request:
            self.stop_run(f"{self.profile_name}: {message}", exit_code)
        raise StopUser()

    def stop_run(self, message: str, exit_code: int | None) -> None:
        """End the whole run now: through the kit when it is wired, else Locust's runner directly."""
        link = context_of(self.environment).link
        if link is not None:
            link.request_stop(message, exit_code)
        elif self.environment.runner is not None:
            gevent.spawn(self.environment.runner.quit)

    def pss_warning(self, reading: MemoryReading, n: int) -> None:
        """Summed RSS over several processes counts shared pages once per process: say so, once."""
        if self.metric != "rss" or reading.procs < 2 or reading.pss_bytes is None or self.warned:
            return
        self.warned = True
        log.warning(
            "loadkit: %s: the target has %d processes and the budget is judged on summed RSS "
            "(%.1f MiB at N=%d), which counts shared pages once per process; PSS is %.1f MiB. "
            "For process-per-agent targets judge with --capacity-metric pss (docs/capacity.md).",
            self.profile_name,
            reading.procs,
            reading.rss_bytes / schema.MIB,
            n,
            reading.pss_bytes / schema.MIB,
        )


class CapacityAgent(SerialDriver):
    """The capacity study's protocol: agents started one at a time, idle, never closed until the end,
    memory read after each is ready; any stop closes them all."""

    def protocol(self) -> None:
        """The ramp: one more idle session at a time until the budget, the cap, a failure or a stop."""
        self.write(CAPACITY_EVENT.baseline, self.read_memory(), n=0)
        n, seen = 0, set()
        while True:
            self.check_stopping(n)
            n += 1
            session_id, ready_ms, error = self.create_session(n)
            reading = self.read_memory()
            if session_id is None:
                self.write(CAPACITY_EVENT.failed, reading, n=n, detail=error)
                self.finish(STOP_FAILURE, f"agent {n} failed to start: {error}", None)
            duplicate = session_id in seen
            seen.add(session_id)
            self.write(
                CAPACITY_EVENT.ready,
                reading,
                n=n,
                session_id=session_id,
                ready_ms=ready_ms,
                detail="duplicate session id" if duplicate else None,
            )
            self.pss_warning(reading, n)
            self.check_stop(n, reading)

    def check_stop(self, n: int, reading: MemoryReading) -> None:
        if not reading.alive:
            self.finish(STOP_TARGET_DIED, f"target gone after agent {n}", exit_codes.TARGET_DIED)
        judged = self.judged_bytes(reading)
        if judged is not None and judged >= self.budget_bytes:
            self.finish(
                STOP_BUDGET,
                f"budget reached at N={n} ({self.metric.upper()} "
                f"{judged / schema.MIB:,.1f} MiB >= {self.budget_bytes / schema.MIB:,.0f} MiB)",
                None,
            )
        if self.max_agents is not None and n >= self.max_agents:
            self.finish(STOP_CAP, f"agent cap {self.max_agents} reached under the budget", None)


class ChurnAgent(SerialDriver):
    """Open a batch of sessions, prompt each once, close them all; memory read after open and after close."""

    profile_name = "churn"

    @classmethod
    def refuse_unfit(
        cls, settings: AgentSettings, chosen: presets.GatewayPreset, kit_starts_target: bool
    ) -> None:
        """Also: the gateway must close a session over its API (churn closes every one it opens)."""
        protocol = cls.protocol_of(settings, chosen)
        closes = isinstance(protocol, AcpSessions) or presets.session_client(chosen).can_close(protocol)
        if not closes:
            raise InputError(f"churn: gateway {chosen.name} has no way to close a session over its API")
        super().refuse_unfit(settings, chosen, kit_starts_target)

    def memory_metric(self) -> str:
        return self.settings.churn.capacity_metric

    def protocol(self) -> None:
        """The cycles: a batch opened, prompted once, closed, memory read after each half."""
        cycles, batch = self.settings.churn.churn_cycles, self.settings.churn.churn_batch
        self.write(CAPACITY_EVENT.baseline, self.read_memory(), n=0)
        closed = 0
        for cycle in range(1, cycles + 1):
            sessions = self.open_batch(cycle, batch)
            self.write(CAPACITY_EVENT.opened, self.read_memory(), n=len(sessions), closed=closed)
            closed += sum(self.close_session(s) for s in sessions)
            reading = self.read_memory()
            self.write(CAPACITY_EVENT.closed, reading, n=0, closed=closed)
            if not reading.alive:
                self.finish(STOP_TARGET_DIED, f"target gone in cycle {cycle}", exit_codes.TARGET_DIED)
        self.finish(STOP_CHURN_DONE, f"{cycles} cycles of {batch} sessions done", None)

    def open_batch(self, cycle: int, batch: int) -> list[str]:
        sessions: list[str] = []
        for i in range(batch):
            self.check_stopping(len(self.open_sessions))
            session_id, _, error = self.create_session((cycle - 1) * batch + i + 1)
            if session_id is None:
                self.write(CAPACITY_EVENT.failed, None, n=len(sessions), detail=error)
                self.finish(STOP_FAILURE, f"session failed to open in cycle {cycle}: {error}", None)
            self.session_client().prompt(session_id)
            sessions.append(session_id)
        return sessions
