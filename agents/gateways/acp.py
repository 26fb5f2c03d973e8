"""ACP (Agent Client Protocol) agent: each simulated agent launches the agent command as its own process
and speaks JSON-RPC over its stdio (initialize, session/new, session/prompt), as Peri and Hermes do.

Each process runs in its own process group and is stopped with the agent (agents/wire/stdio_child.py), so none
outlives the run; the sampler follows them by command pattern. It grants no permissions and serves no
files to the agent.
"""

from __future__ import annotations

import itertools
import json
import os
import time

from locust import between, tag, task
from locust.exception import StopUser

from agents.base import KitAgent, classify_exception, one_line, paced, thinking
from agents.gateways.model_call import fill_usage
from agents.wire.reading import DeadlineExceeded, ReadBounds, TooLarge, deadline
from agents.wire.sse import StreamTiming
from agents.wire.stdio_child import StdioChild, StdioCut
from contract.records import AgentRecord, RequestRecord
from contract.schema import AGENT_EVENT

PROTOCOL_VERSION = 1
_SESSION_ORDINALS = itertools.count(1)


class AcpError(Exception):
    """The agent process answered with a JSON-RPC error (or is not there to answer)."""


class AcpProcess(StdioChild):
    """One agent process (agents/wire/stdio_child.py), spoken to in ACP."""

    def __init__(self, command: str) -> None:
        super().__init__(command, "agent process")
        self.next_id = itertools.count(1)
        self.agent_capabilities: dict = {}

    def exchange(
        self, method: str, params: dict, bounds: ReadBounds, timing: StreamTiming | None = None
    ) -> dict:
        """Send one request and read until its answer; session/update chunks on the way mark tokens.
        A line past --max-sse-line-bytes, or more than --max-response-bytes in all, is TooLarge."""
        self.check_readable()
        request_id = next(self.next_id)
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        received = 0
        while True:
            line = self.read_line(bounds)
            received += len(line)
            if received > bounds.max_bytes:
                self.cut = f"the answer passed --max-response-bytes ({bounds.max_bytes:,} bytes)"
                raise TooLarge(self.cut)
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                if message.get("error"):
                    raise AcpError(f"{message['error'].get('code')} {message['error'].get('message')}")
                return message.get("result") or {}
            if message.get("method") == "session/update" and is_content_chunk(message) and timing:
                timing.mark_token(time.perf_counter())
            elif "id" in message and "method" in message:
                self.send(refusal(message))


def acp_call(
    agent: KitAgent,
    process: AcpProcess,
    operation: str,
    method: str,
    params: dict,
    session_id: str | None,
    asked: dict | None = None,
) -> dict | None:
    """One request reported as a row (with the sizes the workload `asked`, for a prompt);
    session/update notifications on the way are timed as tokens."""
    record = RequestRecord(
        ts=time.time(), agent_id=agent.agent_id, operation=operation, session_id=session_id, **(asked or {})
    )
    timing = StreamTiming(time.perf_counter(), [])
    result = None
    try:
        with deadline(agent.bounds.deadline_s):
            result = process.exchange(method, params, agent.bounds, timing)
        fill_usage(record, result, None)
    except (AcpError, StdioCut, OSError, ValueError, DeadlineExceeded, TooLarge) as exc:
        record.ok, record.error_kind, record.error = False, acp_error_kind(exc), one_line(exc)
    record.latency_ms = (time.perf_counter() - timing.sent) * 1000.0
    if timing.token_times:
        timing.fill(record)
        record.itl_ms_mean, record.itl_ms_max = timing.itl_ms_mean, timing.itl_ms_max
    agent.report(record)
    return result


def initialize_acp(agent: KitAgent, process: AcpProcess) -> bool:
    """initialize, keeping the agent's capabilities on the process; False when it failed."""
    params = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {}}
    init = acp_call(agent, process, "acp.initialize", "initialize", params, None)
    if init is not None:
        process.agent_capabilities = init.get("agentCapabilities") or {}
    return init is not None


def open_acp_session(agent: KitAgent, process: AcpProcess, initialize: bool = True) -> str | None:
    """initialize (once per process) then session/new; the session id, or None when either failed."""
    if initialize and not initialize_acp(agent, process):
        return None
    params = {"cwd": os.getcwd(), "mcpServers": []}
    reply = acp_call(agent, process, "acp.session_new", "session/new", params, None)
    return str(reply["sessionId"]) if reply and reply.get("sessionId") else None


def prompt_params(session_id: str, text: str) -> dict:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


class AcpAgent(KitAgent):
    """One agent process and one ACP session per simulated agent (`--acp-command`)."""

    weight = 1
    wait_time = thinking(between(0.5, 1.5))

    def on_start(self) -> None:
        # No HTTP client: the transport is the child's stdio.
        self.process: AcpProcess | None = None
        self.session_id: str | None = None
        command = self.settings.acp_command
        if not command:
            raise StopUser("no ACP agent command (--acp-command)")
        started = time.perf_counter()
        self.process = AcpProcess(command)
        self.session_id = open_acp_session(self, self.process)
        self.record(
            AgentRecord(
                ts=time.time(),
                agent_id=self.agent_id,
                n=next(_SESSION_ORDINALS),
                session_id=self.session_id,
                event=AGENT_EVENT.created if self.session_id else AGENT_EVENT.failed,
                ready_ms=(time.perf_counter() - started) * 1000.0 if self.session_id else None,
                error=None if self.session_id else "ACP start-up failed (see requests.csv)",
            )
        )

    def on_stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.record_closed(self.session_id)
            self.process = None
        super().on_stop()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @tag("acp")
    @task
    @paced
    def prompt(self) -> None:
        if self.session_id and self.process is not None:
            draw = self.workload.next_request(self.tagged_prompt(), self.arrival)
            acp_call(
                self,
                self.process,
                "acp.prompt",
                "session/prompt",
                prompt_params(self.session_id, draw.text),
                self.session_id,
                draw.asked(sends_max_tokens=False),
            )


def is_content_chunk(message: dict) -> bool:
    update = (message.get("params") or {}).get("update") or {}
    content = update.get("content") or {}
    return update.get("sessionUpdate") == "agent_message_chunk" and bool(content.get("text"))


def refusal(request: dict) -> dict:
    """Answer the agent's own requests: cancel permission prompts, refuse everything else."""
    if request.get("method") == "session/request_permission":
        return {"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": {"outcome": "cancelled"}}}
    error = {"code": -32601, "message": "the load kit serves no client methods"}
    return {"jsonrpc": "2.0", "id": request["id"], "error": error}


def acp_error_kind(exc: Exception) -> str:
    if isinstance(exc, (DeadlineExceeded, TooLarge)):
        return classify_exception(exc)
    return "connection" if "closed" in str(exc) or isinstance(exc, OSError) else "protocol"
