"""The serial capacity and churn drivers (seeds/000): one Locust user runs the whole protocol itself, as
fast as the target allows, reading target memory from outside after every step into capacity.csv.

Not paced by LoadTestShape ticks (once a second). Computes nothing beyond the stop checks; the figures
come from analysis/capacity.py. Speaks the simulator's session protocol (POST/DELETE /v1/agents).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import NoReturn

import gevent
from locust import constant, task
from locust.exception import StopUser

from agents.base import KitAgent
from agents.run_link import run_link_of
from contract import exit_codes, schema
from contract.csv_append import CsvAppender
from contract.errors import InputError
from contract.records import AgentRecord
from contract.schema import (
    STOP_BUDGET,
    STOP_CAP,
    STOP_CHURN_DONE,
    STOP_FAILURE,
    STOP_INTERRUPTED,
    STOP_TARGET_DIED,
)
from sampler.memory_probe import MemoryProbe, MemoryReading
from sampler.service_client import RemoteMemoryProbe, ServiceClient, ServiceError
from sampler.targets import CgroupSelector, PatternSelector, Target, TargetNotFound, TreeSelector

NO_REFRESH_S = 1e9  # the probe re-finds processes itself, once per step


class ProbeError(InputError):
    """The target's processes cannot be found or read; the message is one line."""


def probe_for(
    pids: list[int],
    matches: list[str],
    cgroups: list[str],
    sidecar_pids: list[int],
    sidecar_matches: list[str],
) -> MemoryProbe:
    """A probe over the target selectors, sidecars excluded from the target and read apart."""
    try:
        sidecar_sel = [TreeSelector(p) for p in sidecar_pids] + [PatternSelector(m) for m in sidecar_matches]
        sidecar = Target(sidecar_sel, NO_REFRESH_S) if sidecar_sel else None
        selectors = (
            [TreeSelector(p) for p in pids]
            + [PatternSelector(m) for m in matches]
            + [CgroupSelector(c) for c in cgroups]
        )
        if not selectors:
            raise ProbeError(
                "capacity needs the target's processes: --target-pid, --target-match, "
                "--target-cgroup or a target the kit starts"
            )
        exclude = (lambda: sidecar.pids) if sidecar else set
        return MemoryProbe(Target(selectors, NO_REFRESH_S, exclude=exclude), sidecar)
    except TargetNotFound as exc:
        raise ProbeError(str(exc)) from None


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


class SerialDriver(KitAgent):
    """Shared plumbing of the capacity and churn users: options, probe, capacity.csv, stopping the run."""

    abstract = True
    wait_time = constant(0)
    profile_name = "capacity"

    def on_start(self) -> None:
        super().on_start()
        params = self.settings.capacity
        self.metric = params.capacity_metric
        self.budget_bytes = params.memory_budget_bytes
        self.max_agents = params.max_agents
        self.log: CsvAppender | None = None
        self.probe: MemoryProbe | None = None
        self.open_sessions: list[str] = []  # ours, closed at the end on a gateway we did not start
        try:
            self.probe = self.make_probe()
        except ProbeError as exc:
            self.stop_run(f"{self.profile_name}: {exc}", exc.exit_code)
            raise StopUser() from None
        self.log = CsvAppender(self.run_dir() / schema.CAPACITY_CSV, schema.CAPACITY_COLUMNS)

    def on_stop(self) -> None:
        self.clean_up()  # also when the run's stop killed the driver mid-step
        if self.log is not None:
            self.log.close()
        if self.probe is not None:
            self.probe.close()
        super().on_stop()

    def make_probe(self) -> MemoryProbe | RemoteMemoryProbe:
        if self.settings.sampler_url:  # the target is on another host: its sampler service reads each step
            return remote_probe(list(self.settings.sampler_url), self.settings.sampler_token_env)
        link = run_link_of(self.environment)
        own = [link.target_pid] if link is not None and link.target_pid else []
        return probe_for(
            own + list(self.settings.target_pid),
            list(self.settings.target_match),
            list(self.settings.target_cgroup),
            list(self.settings.sidecar_pid),
            list(self.settings.sidecar_match),
        )

    def run_dir(self) -> Path:
        path = Path(self.settings.run_dir)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def write(self, event: str, reading: MemoryReading | None, **fields) -> None:
        """One capacity.csv row, flushed at once (a crash loses nothing already measured)."""
        memory = {}
        if reading is not None:
            memory = {
                "rss_bytes": reading.rss_bytes,
                "pss_bytes": reading.pss_bytes,
                "uss_bytes": reading.uss_bytes,
                "procs": reading.procs,
                "sidecar_rss_bytes": reading.sidecar_rss_bytes,
            }
        assert self.log is not None  # made at on_start, before any step
        self.log.write(
            {
                "ts": time.time(),
                "event": event,
                "closed": 0,
                "budget_bytes": self.budget_bytes,
                "metric": self.metric,
                **memory,
                **fields,
            }
        )
        self.log.flush()

    def read_memory(self, with_pss: bool) -> MemoryReading:
        assert self.probe is not None  # made at on_start, or the user stopped there
        return self.probe.read(with_pss)

    def judged_bytes(self, reading: MemoryReading) -> int | None:
        return reading.pss_bytes if self.metric == "pss" else reading.rss_bytes

    def create_session(self, n: int) -> tuple[str | None, float | None, str | None]:
        """Open one idle session tagged with the run id: (id, ready ms, error)."""
        started = time.perf_counter()
        body, record = self.json_call(
            "session.create",
            "POST",
            "/v1/agents",
            json={"run_id": self.run_id, "metadata": {"agent": self.agent_id, "n": n}},
        )
        session_id = str(body["id"]) if body and body.get("id") else None
        if session_id:
            self.open_sessions.append(session_id)
        ready_ms = (time.perf_counter() - started) * 1000.0 if session_id else None
        error = None if session_id else (record.error or "no session id in reply")
        self.record(
            AgentRecord(
                ts=time.time(),
                agent_id=self.agent_id,
                n=n,
                session_id=session_id,
                event="created" if session_id else "failed",
                ready_ms=ready_ms,
                error=error,
            )
        )
        return session_id, ready_ms, error

    def close_session(self, session_id: str) -> bool:
        if session_id in self.open_sessions:
            self.open_sessions.remove(session_id)
        _, record = self.json_call(
            "session.close", "DELETE", f"/v1/agents/{session_id}", ids={"session_id": session_id}
        )
        self.record(
            AgentRecord(
                ts=time.time(),
                agent_id=self.agent_id,
                session_id=session_id,
                event="closed",
                error=record.error,
            )
        )
        return record.ok

    def finish(self, code: str, message: str, exit_code: int | None) -> NoReturn:
        self.write("stop", None, detail=code)
        self.clean_up()
        self.stop_run(f"{self.profile_name}: {message}", exit_code)
        raise StopUser()

    def clean_up(self) -> None:
        """Close the sessions this run left open on a gateway the kit did not start (one it started is
        stopped with them); measurement is over, so closing cannot skew it. --no-cleanup keeps them."""
        link = run_link_of(self.environment)
        if not self.settings.cleanup or (link is not None and link.target_started_by_kit):
            return
        while self.open_sessions:
            self.close_session(self.open_sessions[-1])

    def stop_if_run_ends(self) -> None:
        """The run is ending (a signal, a dead target): create nothing more, close what is open."""
        link = run_link_of(self.environment)
        if link is not None and link.stopping():
            self.finish(STOP_INTERRUPTED, "stopped with the run", None)

    def stop_run(self, message: str, exit_code: int | None) -> None:
        """End the whole run now: through the kit when it is wired, else Locust's runner directly."""
        link = run_link_of(self.environment)
        if link is not None:
            link.request_stop(message, exit_code)
        elif self.environment.runner is not None:
            gevent.spawn(self.environment.runner.quit)


class CapacityAgent(SerialDriver):
    """seeds/000: agents started one at a time, idle, never closed, memory read after each is ready."""

    @task
    def serial_capacity(self) -> None:
        baseline = self.read_memory(with_pss=True)
        self.write("baseline", baseline, n=0)
        n, seen = 0, set()
        while True:
            self.stop_if_run_ends()
            n += 1
            session_id, ready_ms, error = self.create_session(n)
            reading = self.read_memory(with_pss=self.metric == "pss")
            if session_id is None:
                self.write("failed", reading, n=n, detail=error)
                self.finish(STOP_FAILURE, f"agent {n} failed to start: {error}", None)
            duplicate = session_id in seen
            seen.add(session_id)
            self.write(
                "ready",
                reading,
                n=n,
                session_id=session_id,
                ready_ms=ready_ms,
                detail="duplicate session id" if duplicate else None,
            )
            self.check_stop(n, reading)

    def check_stop(self, n: int, reading: MemoryReading) -> None:
        if not reading.alive:
            self.finish(STOP_TARGET_DIED, f"target gone after agent {n}", exit_codes.TARGET_DIED)
        judged = self.judged_bytes(reading)
        if judged is not None and judged >= self.budget_bytes:
            self.write("budget", self.read_memory(with_pss=True), n=n)
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

    @task
    def churn_cycles(self) -> None:
        cycles, batch = self.settings.churn.churn_cycles, self.settings.churn.churn_batch
        self.write("baseline", self.read_memory(with_pss=self.metric == "pss"), n=0)
        closed = 0
        for cycle in range(1, cycles + 1):
            sessions = self.open_batch(cycle, batch)
            self.write(
                "opened", self.read_memory(with_pss=self.metric == "pss"), n=len(sessions), closed=closed
            )
            closed += sum(self.close_session(s) for s in sessions)
            reading = self.read_memory(with_pss=self.metric == "pss")
            self.write("closed", reading, n=0, closed=closed)
            if not reading.alive:
                self.finish(STOP_TARGET_DIED, f"target gone in cycle {cycle}", exit_codes.TARGET_DIED)
        self.finish(STOP_CHURN_DONE, f"{cycles} cycles of {batch} sessions done", None)

    def open_batch(self, cycle: int, batch: int) -> list[str]:
        sessions: list[str] = []
        for i in range(batch):
            self.stop_if_run_ends()
            session_id, _, error = self.create_session((cycle - 1) * batch + i + 1)
            if session_id is None:
                self.write("failed", None, n=len(sessions), detail=error)
                self.finish(STOP_FAILURE, f"session failed to open in cycle {cycle}: {error}", None)
            self.json_call(
                "session.prompt",
                "POST",
                f"/v1/agents/{session_id}/prompt",
                ids={"session_id": session_id},
                json={"input": self.settings.prompt or "hi"},
            )
            sessions.append(session_id)
        return sessions
