"""The capacity/churn session clients of the presets whose sessions are not templates alone: OpenClaw's
(closed over its RPC) and LangGraph's (runs go to an assistant found at start). Their gateway's protocol
is in agents/gateways/; what makes them idle-session clients is here, beside the others.
"""

from __future__ import annotations

from dataclasses import replace

from agents.capacity.idle_sessions import Opened, RestSessionClient, SessionSetupError
from agents.gateways.langgraph import discover_assistant
from agents.gateways.openclaw import timed_delete
from agents.gateways.spec import SessionSteps


class OpenClawSessionClient(RestSessionClient):
    """The capacity/churn sessions of the openclaw preset: opened by a chat turn naming the session key
    (session_steps.OPENCLAW), known by that key, closed over the RPC (its HTTP API has no delete)."""

    @classmethod
    def can_close(cls, steps: SessionSteps) -> bool:
        return True

    def open(self, n: int) -> Opened:
        """The session is the key the first turn named; the reply's id is only the completion's."""
        opened = super().open(n)
        if opened.session_id is None:
            return opened
        return replace(opened, session_id=self.session_key(n))

    def close(self, session_id: str) -> str | None:
        record, deleted = timed_delete(self.agent, session_id)
        if record.ok and not deleted:
            record.ok, record.error_kind = False, "rpc"
            record.error = f"sessions.list shows no session keyed {session_id}"
        self.agent.report(record)
        return record.error


class LangGraphSessionClient(RestSessionClient):
    """The capacity/churn sessions of the langgraph preset: runs go to --assistant-id or, without one, to
    the assistant the load agent would pick (discover_assistant), found once at start."""

    def start(self) -> None:
        if self.assistant_id is None:
            self.assistant_id = discover_assistant(self.agent)
        if self.assistant_id is None:
            host = self.agent.environment.host
            raise SessionSetupError(
                f"POST {host}/assistants/search found no LangGraph assistant (see requests.csv): "
                "deploy a graph or pass --assistant-id"
            )
        super().start()
