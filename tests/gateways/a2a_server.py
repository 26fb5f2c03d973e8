"""A real A2A server (a2a-sdk, JSON-RPC binding, protocol 1.0 with 0.3 compatibility) for integration tests;
with `--v03-only` it serves only the SDK's own 0.3 adapter (1.0 methods get -32601) and a 0.3 agent card.

Its agent needs no LLM: it echoes the prompt after `--work-s` seconds, having first reported `--tool-calls`
tool runs as an agent built on Google's ADK does (a working status message with a `function_call` data
part, then one with its `function_response`). It must only ever bind loopback.
"""

from __future__ import annotations

import argparse
import asyncio

import uvicorn
from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.routes.jsonrpc_dispatcher import JSONRPC03Adapter  # 0.3 adapter; direct import cycles
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part, TaskState
from google.protobuf import json_format, struct_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class EchoExecutor(AgentExecutor):
    """Works for a fixed time, reports its tool runs, then completes the task with the prompt echoed as an
    artifact."""

    def __init__(self, work_s: float, tool_calls: int = 0) -> None:
        self.work_s = work_s
        self.tool_calls = tool_calls

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        await asyncio.sleep(self.work_s)
        for n in range(self.tool_calls):
            call = {"id": f"call-{n}", "name": "lookup"}
            for kind, data in (("function_call", {"args": {}}), ("function_response", {"response": {}})):
                message = updater.new_agent_message([adk_part(kind, {**call, **data})])
                await updater.update_status(TaskState.TASK_STATE_WORKING, message=message)
        await updater.add_artifact([Part(text=f"echo: {context.get_user_input()}")])
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def adk_part(kind: str, data: dict) -> Part:
    """A data part as ADK's A2A converter spells a tool call or result (metadata `adk_type`)."""
    value, metadata = struct_pb2.Value(), struct_pb2.Struct()
    json_format.ParseDict(data, value)
    metadata.update({"adk_type": kind})
    return Part(data=value, metadata=metadata)


def build_app(port: int, work_s: float, v03_only: bool = False, tool_calls: int = 0) -> Starlette:
    url = f"http://127.0.0.1:{port}/"
    card = AgentCard(
        name="loadkit-echo",
        description="LLM-free echo agent for the kit's integration tests",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["test"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(work_s, tool_calls), task_store=InMemoryTaskStore(), agent_card=card
    )
    health = Route("/health", lambda _request: JSONResponse({"ok": True}))
    if v03_only:
        return Starlette(routes=[*v03_routes(handler, url), health])
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True),
        health,
    ]
    return Starlette(routes=routes)


def v03_routes(handler: DefaultRequestHandler, url: str) -> list[Route]:
    """A 0.3-only server: the SDK's 0.3 JSON-RPC adapter at `/`, a 0.3-shaped card; 1.0 methods unknown."""
    adapter = JSONRPC03Adapter(handler)
    card = {"name": "loadkit-echo", "protocolVersion": "0.3.0", "url": url, "preferredTransport": "JSONRPC"}

    async def rpc(request: Request):
        body = await request.json()
        method, request_id = body.get("method", ""), body.get("id")
        if adapter.supports_method(method):
            return await adapter.handle_request(request_id, method, body, request)
        error = {"code": -32601, "message": f"Method not found: {method}"}
        return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error})

    return [
        Route("/", rpc, methods=["POST"]),
        Route("/.well-known/agent-card.json", lambda _request: JSONResponse(card)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--work-s", type=float, default=0.2)
    parser.add_argument("--v03-only", action="store_true", help="serve protocol 0.3 only")
    parser.add_argument("--tool-calls", type=int, default=0, help="tool runs reported per task")
    args = parser.parse_args()
    app = build_app(args.port, args.work_s, args.v03_only, args.tool_calls)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
