"""`python -m tests.simgateway.mcp_sdk_client URL`: the official SDK's own client against an MCP endpoint
(its own process: the SDK is asyncio, the tests' process is gevent's). Prints one JSON line: the tools it
listed, the first tool's result text size and isError, the session id it held."""

from __future__ import annotations

import asyncio
import json
import sys

import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str) -> dict:
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(
            read, write, client_info=types.Implementation(name="sdk-probe", version="1")
        ) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
        result = await session.call_tool(tools[0].name, {"query": "sdk"})
        text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
        return {
            "tools": [t.name for t in tools],
            "schema": tools[0].input_schema,
            "result_chars": len(text),
            "is_error": result.is_error,
        }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1]))))
