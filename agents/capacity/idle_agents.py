"""Idle agent sessions (the capacity study): each simulated agent opens one session tagged with the run id,
keeps it alive without prompting, and closes it when it stops. Lifecycle rows go to agents.csv.

Speaks the simulator's session protocol (POST/GET/DELETE /v1/agents).
"""

from __future__ import annotations

import itertools
import time

from locust import constant, tag, task

from agents.base import KitAgent, paced
from contract.records import AgentRecord, RequestRecord
from contract.schema import AGENT_EVENT

_SESSION_ORDINALS = itertools.count(1)


class SessionAgent(KitAgent):
    """Holds one idle session for its whole life; checks it is still there every few seconds. Under an
    open model one arrival is one check (1 request); each agent adds its session's create and close."""

    weight = 1
    wait_time = constant(5)

    def on_start(self) -> None:
        super().on_start()
        self.session_id = self.open_session()

    def on_stop(self) -> None:
        if self.session_id and self.settings.cleanup:
            self.call("session.close", "DELETE", f"/v1/agents/{self.session_id}")
            self.record_closed(self.session_id)
        super().on_stop()

    @tag("sessions")
    @task
    @paced
    def check_alive(self) -> None:
        if self.session_id:
            self.call("session.get", "GET", f"/v1/agents/{self.session_id}")

    def open_session(self) -> str | None:
        started = time.perf_counter()
        n = next(_SESSION_ORDINALS)
        body, record = self.call(
            "session.create",
            "POST",
            "/v1/agents",
            json={"run_id": self.run_id, "metadata": {"agent": self.agent_id}},
        )
        session_id = str(body["id"]) if body and body.get("id") else None
        event = AgentRecord(
            ts=time.time(),
            agent_id=self.agent_id,
            n=n,
            session_id=session_id,
            event=AGENT_EVENT.created if session_id else AGENT_EVENT.failed,
            ready_ms=(time.perf_counter() - started) * 1000.0 if session_id else None,
            error=None if session_id else (record.error or "no session id in reply"),
        )
        self.record(event)
        return session_id

    def call(self, operation: str, method: str, path: str, **kwargs) -> tuple[dict | None, RequestRecord]:
        ids = {"session_id": getattr(self, "session_id", None)}
        return self.json_call(operation, method, path, ids=ids, **kwargs)
