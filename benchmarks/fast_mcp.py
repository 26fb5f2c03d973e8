"""`python benchmarks/fast_mcp.py PORT`: the MCP benchmark's target only (benchmarks/bench_mcp.py), never a
simulator: a raw asyncio HTTP/1.1 server on 127.0.0.1 answering Streamable HTTP's POST /mcp with fixed
JSON (initialize with an `Mcp-Session-Id`, tools/list with one tool, tools/call with a short text result,
ping), 202 to notifications and 200 to DELETE, on keep-alive connections.

Why: the simulator's MCP endpoint is the SDK's server, which tops at ~200 calls/s on a shared core; this
one spends some tens of microseconds a call, so the load generator is what the benchmark measures. It
checks nothing (no session table, no version check): it is a stopwatch's far end, not an MCP server.
"""

from __future__ import annotations

import asyncio
import json
import sys
import uuid

from fast_http import serve  # this script's own folder

INITIALIZED = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "bench-fast-mcp", "version": "1"},
}
TOOLS = {
    "tools": [
        {
            "name": "search",
            "description": "returns a fixed text",
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        }
    ]
}
CALLED = {"content": [{"type": "text", "text": "fast result"}], "isError": False}
RESULTS = {"initialize": INITIALIZED, "tools/list": TOOLS, "tools/call": CALLED}


def response(status: str, body: bytes = b"", headers: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    head += f"{headers}\r\n"
    return head.encode() + body


def answer(body: bytes) -> bytes:
    """One POST's response: a notification or a client's response gets 202, a request its fixed result."""
    message = json.loads(body)
    if "id" not in message or "method" not in message:
        return response("202 Accepted")
    result = RESULTS.get(message["method"], {})
    reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
    session = f"Mcp-Session-Id: {uuid.uuid4().hex}\r\n" if message["method"] == "initialize" else ""
    return response("200 OK", reply, session)


def answered(method: str, body: bytearray) -> bytes:
    return answer(bytes(body)) if method == "POST" else response("200 OK")


if __name__ == "__main__":
    asyncio.run(serve(answered, int(sys.argv[1])))
