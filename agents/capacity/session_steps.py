"""Each known gateway's idle-session protocol for the capacity and churn profiles, as data: how to open one
session (and materialise it with a first message where the gateway needs one), know it is ready, prompt
it, close it. Every session carries the run id (in its id, title or metadata).

Data only, checked against the real servers in tests/gateways/test_capacity_gateways.py; no connection here.
"""

from __future__ import annotations

from agents.capacity.idle_sessions import AcpSessions
from agents.gateways.spec import ReadyCheck, RequestTemplate, SessionSteps

SIMULATOR = SessionSteps(
    create=(
        RequestTemplate(
            "session.create",
            "POST",
            "/v1/agents",
            body={"run_id": "{run_id}", "metadata": {"agent": "{agent_id}", "n": "{n}"}},
            id_path="id",
        ),
    ),
    prompt=RequestTemplate("session.prompt", "POST", "/v1/agents/{id}/prompt", body={"input": "{prompt}"}),
    close=RequestTemplate("session.close", "DELETE", "/v1/agents/{id}"),
)

# Hermes Agent API server: a session row (its id carries the run id), then a first chat turn so the
# gateway builds its per-session agent (the memory an idle session holds).
HERMES = SessionSteps(
    create=(
        RequestTemplate(
            "session.create",
            "POST",
            "/api/sessions",
            body={"id": "{session}", "title": "{session}"},
            id_path="session.id",
        ),
        RequestTemplate(
            "session.first_message", "POST", "/api/sessions/{id}/chat", body={"message": "{prompt}"}
        ),
    ),
    prompt=RequestTemplate("session.prompt", "POST", "/api/sessions/{id}/chat", body={"message": "{prompt}"}),
    close=RequestTemplate("session.close", "DELETE", "/api/sessions/{id}"),
)

_LANGGRAPH_RUN = {
    "assistant_id": "{assistant_id}",
    "input": {"messages": [{"role": "user", "content": "{prompt}"}], "prompt": "{prompt}"},
    "metadata": {"loadkit_run": "{run_id}"},
}
# LangGraph server: a thread tagged with the run id, then a first run waited on, so the thread holds state.
LANGGRAPH = SessionSteps(
    create=(
        RequestTemplate(
            "session.create",
            "POST",
            "/threads",
            body={"metadata": {"loadkit_run": "{run_id}", "loadkit_n": "{n}"}},
            id_path="thread_id",
        ),
        RequestTemplate("session.first_run", "POST", "/threads/{id}/runs/wait", body=_LANGGRAPH_RUN),
    ),
    prompt=RequestTemplate("session.prompt", "POST", "/threads/{id}/runs/wait", body=_LANGGRAPH_RUN),
    close=RequestTemplate("session.close", "DELETE", "/threads/{id}"),
)

_A2A = {"A2A-Version": "1.0"}


def _a2a_call(operation: str, method: str, params: dict, id_path: str | None = None) -> RequestTemplate:
    """One A2A JSON-RPC call (protocol 1.0) at --a2a-path."""
    body = {"jsonrpc": "2.0", "id": "{uuid}", "method": method, "params": params}
    return RequestTemplate(operation, "POST", "{a2a_path}", headers=_A2A, body=body, id_path=id_path)


# A2A (protocol 1.0): a message opens a context and a task; the session is ready while its task is
# working (an idle agent); closing cancels that task. A JSON-RPC error arrives with HTTP 200.
A2A = SessionSteps(
    create=(
        _a2a_call(
            "session.create",
            "SendMessage",
            {
                "message": {
                    "messageId": "{uuid}",
                    "role": "ROLE_USER",
                    "parts": [{"text": "{prompt}"}],
                    "metadata": {"loadkit_run": "{run_id}"},
                },
                "configuration": {"returnImmediately": True},
            },
            id_path="result.task.id",
        ),
    ),
    ready=ReadyCheck(
        _a2a_call("session.ready", "GetTask", {"id": "{id}"}),
        status_path="result.status.state",
        ready=("TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"),
        failed=("TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED", "TASK_STATE_COMPLETED"),
    ),
    close=_a2a_call("session.close", "CancelTask", {"id": "{id}"}),
    error_path="error",
)

_OPENCLAW_TURN = {"model": "{model}", "messages": [{"role": "user", "content": "{prompt}"}], "stream": False}
# OpenClaw (from its docs, docs/gateway/openai-http-api.md): a session is keyed by x-openclaw-session-key
# and materialised by its first chat turn. Its HTTP surface has no session delete: the preset's session
# client (agents/capacity/gateway_clients.py) keeps the key as the session id and closes it with the RPC
# sessions.delete.
OPENCLAW = SessionSteps(
    create=(
        RequestTemplate(
            "session.create",
            "POST",
            "/v1/chat/completions",
            headers={"x-openclaw-session-key": "{session}"},
            body=_OPENCLAW_TURN,
            id_path="id",
        ),
    ),
    prompt=RequestTemplate(
        "session.prompt",
        "POST",
        "/v1/chat/completions",
        headers={"x-openclaw-session-key": "{id}"},
        body=_OPENCLAW_TURN,
    ),
    close=None,
)

# MCP: what capacity and churn need to know (agents/capacity/mcp_sessions.py speaks it: initialize, DELETE)
MCP = SessionSteps(
    create=(RequestTemplate("mcp.initialize", "POST", "/mcp"),),
    close=RequestTemplate("mcp.close", "DELETE", "/mcp"),
)
ACP = AcpSessions(per_process=True)
ACP_SHARED = AcpSessions(per_process=False)
