"""A real agent whose tools live on an MCP server, as users write them: the `openai` package for its model,
the official `mcp` SDK's Streamable HTTP client for its tools; every tool call the model asks is a
tools/call on the server, its result text the tool message of the next step. Run as a script:

    python tests/capture/mcp_agent.py BASE_URL TASKS

(the model at BASE_URL/v1, the MCP server at BASE_URL/mcp). Prints one JSON line: the tools/call it made
(name, arguments, result characters, isError, progress notifications seen).
"""

from __future__ import annotations

import asyncio
import json
import sys

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from openai import AsyncOpenAI

from tests.capture.openai_agent import API_KEY, TOOLS


async def run_task(model: AsyncOpenAI, tools: ClientSession, n: int, made: list[dict]) -> None:
    messages: list[dict] = [
        {"role": "system", "content": "You are a careful research agent."},
        {"role": "user", "content": f"Task {n}: look three facts up about gateways and summarise them."},
    ]
    for _ in range(20):
        reply = await model.chat.completions.create(model="sim-model", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return
        messages.append(
            {"role": "assistant", "content": None, "tool_calls": [c.model_dump() for c in message.tool_calls]}
        )
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            text = await call_tool(tools, call.function.name, arguments, made)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


async def call_tool(tools: ClientSession, name: str, arguments: dict, made: list[dict]) -> str:
    """One tools/call asking for progress; the result's text."""
    progress: list[float] = []

    async def on_progress(done: float, _total: float | None, _message: str | None) -> None:
        progress.append(done)

    result = await tools.call_tool(name, arguments, progress_callback=on_progress)
    assert isinstance(result, types.CallToolResult)
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    made.append({"name": name, "arguments": arguments, "chars": len(text)})
    made[-1].update(is_error=result.is_error, progress=len(progress))
    return text


async def main(base: str, tasks: int) -> dict:
    model = AsyncOpenAI(base_url=base.rstrip("/") + "/v1", api_key=API_KEY, max_retries=0)
    made: list[dict] = []
    async with (
        streamable_http_client(base.rstrip("/") + "/mcp") as (read, write),
        ClientSession(read, write, client_info=types.Implementation(name="mcp-agent", version="1")) as tools,
    ):
        await tools.initialize()
        await tools.list_tools()
        for n in range(tasks):
            await run_task(model, tools, n, made)
    return {"tool_calls": made}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], int(sys.argv[2])))))
