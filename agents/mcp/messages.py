"""One MCP message as it arrives, whatever carried it: parsed as JSON-RPC 2.0, or the error saying it is not
MCP. Shared by every transport (agents/mcp/client.py, agents/mcp/sse_transport.py, agents/mcp/stdio.py); no
I/O.
"""

from __future__ import annotations

import json

# Every protocol revision the kit speaks, oldest first (2024-11-05: stdio and HTTP+SSE only); the newest is
# what initialize offers unless --mcp-protocol-version pins another.
MCP_REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


class McpProtocolError(Exception):
    """The answer is not what MCP says it must be (not JSON-RPC, no answer to the request, a protocol
    version the kit does not speak)."""


def parsed(data: bytes) -> dict:
    """One JSON-RPC message; McpProtocolError naming its start when it is not one."""
    try:
        message = json.loads(data)
    except ValueError:
        raise McpProtocolError(f"not JSON-RPC: {data[:60]!r}") from None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise McpProtocolError(f"not a JSON-RPC 2.0 message: {data[:60]!r}")
    return message
