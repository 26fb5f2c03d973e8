"""The kit's MCP client as the client the MCP conformance suite drives (`@modelcontextprotocol/conformance
client --command "python -m tests.gateways.mcp_conformance_client"`): the suite starts a scenario's
server and runs this with its URL as the last argument. It does what an MCP agent of the kit does, with
the kit's own classes (agents/mcp/client.py, agents/mcp/mix.py): initialize, notifications/initialized,
tools/list, each listed tool called once with arguments made from its schema, then the session closed.
Exits 1 when a step fails (the line says which). Not a test module.
"""

from __future__ import annotations

from gevent import monkey

monkey.patch_all()  # as Locust runs the agents: the client's deadlines are gevent's

import sys  # noqa: E402
from urllib.parse import urlsplit  # noqa: E402

import httpx  # noqa: E402

from agents.mcp.client import McpHttpSession  # noqa: E402
from agents.mcp.mix import ToolMix, arguments_for, choose  # noqa: E402
from agents.wire.reading import ReadBounds  # noqa: E402

BOUNDS = ReadBounds(20.0, 16 * 1024 * 1024, 1024 * 1024)


def main(url: str) -> int:
    parts = urlsplit(url)
    with httpx.Client(base_url=f"{parts.scheme}://{parts.netloc}", timeout=20.0) as client:
        info = {"name": "loadkit-conformance", "version": "1"}
        session = McpHttpSession(client, parts.path or "/", BOUNDS, info)
        answer = session.initialize()
        if not answer.ok:
            print(f"initialize failed: {answer.status_code} {answer.error}", file=sys.stderr)
            return 1
        session.initialized()
        listed = session.request("tools/list")
        tools = list((listed.result or {}).get("tools") or ())
        if tools:  # every tool the scenario lists: it checks they were called
            schemas = {t["name"]: t.get("inputSchema") or {} for t in tools}
            for name in choose(ToolMix({}, {}, allow_unsafe=True), tools).weights:
                arguments = arguments_for(schemas[name], "conformance")
                answer = session.request("tools/call", {"name": name, "arguments": arguments})
                print(f"tools/call {name}: ok={answer.ok} {answer.result or answer.error}")
        session.close()
    print(f"protocol version agreed: {session.protocol_version}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[-1]))
