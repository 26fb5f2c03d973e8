"""OpenClaw gateway agents: the chat and Responses agents, with the session each one opens recorded in
agents.csv and deleted at stop over the gateway's WebSocket RPC (its HTTP API cannot delete sessions).

An OpenClaw session is created by the first turn that names its key (header x-openclaw-session-key, or the
`user` field); the key is `<run id>-<agent id>`, so cleanup deletes only sessions this run's agents opened.
The capacity/churn session client keys its sessions `loadkit-<run id>-<n>` and deletes them the same way.
"""

from __future__ import annotations

import os
import time

from agents.base import KitAgent, one_line
from agents.gateways.openai_chat import ChatAgent
from agents.gateways.openclaw_rpc import OpenClawRpc, OpenClawRpcError
from agents.gateways.responses import ResponsesAgent
from contract.records import AgentRecord, RequestRecord
from contract.schema import AGENT_EVENT


class OpenClawSession(KitAgent):
    """Mixin: records the gateway session when a first turn succeeds, deletes it when the agent stops."""

    abstract = True

    def on_start(self) -> None:
        super().on_start()
        self.session_recorded = False

    def report(self, record: RequestRecord, response_length: int = 0) -> None:
        super().report(record, response_length)
        if record.ok and not self.session_recorded and record.operation != "session.close":
            self.session_recorded = True
            self.record(
                AgentRecord(
                    ts=time.time(),
                    agent_id=self.agent_id,
                    session_id=record.session_id,
                    event=AGENT_EVENT.created,
                    ready_ms=record.latency_ms,
                )
            )

    def on_stop(self) -> None:
        # also when no turn was reported: a turn cut off at stop may still have opened the session
        if self.settings.cleanup:
            self.close_session(f"{self.run_id}-{self.agent_id}")
        super().on_stop()

    def close_session(self, session_key: str) -> None:
        """Delete the gateway sessions whose key ends in ours; a row `session.close` and an agents.csv row
        when there was one to delete (or the attempt failed), nothing when the agent never opened one."""
        record, deleted = timed_delete(self, session_key)
        if not deleted and record.ok:
            return
        self.report(record)
        self.record_closed(session_key, record.error)


def timed_delete(agent: KitAgent, session_key: str) -> tuple[RequestRecord, list[str]]:
    """delete_sessions for one key, timed: its `session.close` row (not yet reported), the keys deleted."""
    record = RequestRecord(ts=time.time(), agent_id=agent.agent_id, operation="session.close")
    record.session_id = session_key
    started = time.perf_counter()
    name = agent.settings.api_key_env
    token = os.environ.get(name) if name else None
    try:
        url = agent.environment.host or agent.host or ""
        deleted = delete_sessions(url, token, session_key, agent.settings.request_timeout)
    except OpenClawRpcError as exc:
        deleted = []
        record.ok, record.error_kind, record.error = False, "rpc", one_line(exc)
    record.latency_ms = (time.perf_counter() - started) * 1000.0
    return record, deleted


def delete_sessions(
    http_url: str, token: str | None, session_key: str, timeout_s: float = 120.0
) -> list[str]:
    """Delete every session whose key is `agent:<agent id>:[<surface>:]<session_key>`; the keys deleted.

    The header maps to `agent:main:<key>`, the `user` field to `agent:main:openai-user:<key>` (chat) or
    `...:openresponses-user:<key>` (Responses): matching the suffix covers all three, and nothing else.
    OpenClaw lower-cases keys: they are matched lower-cased (the kit refuses an upper-case --run-id).
    """
    session_key = session_key.lower()  # the gateway's own spelling of every key it stores
    rpc = OpenClawRpc(http_url, token, timeout_s)
    try:
        listed = rpc.call("sessions.list", {"search": session_key, "limit": 100}).get("sessions") or []
        keys = [row["key"] for row in listed if str(row.get("key", "")).endswith(f":{session_key}")]
        for key in keys:
            rpc.call("sessions.delete", {"key": key})
    finally:
        rpc.forget_device()
    return keys


class OpenClawChatAgent(OpenClawSession, ChatAgent):
    """ChatAgent against OpenClaw's /v1/chat/completions; its session is deleted when it stops."""


class OpenClawResponsesAgent(OpenClawSession, ResponsesAgent):
    """ResponsesAgent against OpenClaw's /v1/responses; its session is deleted when it stops."""
