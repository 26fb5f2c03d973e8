"""The MCP agent's options (agents/mcp/agent.py, the probe and the capacity clients read them through
AgentSettings, whose fields are these options' dests), declared once with their conversions."""

from __future__ import annotations

from typing import Any

from agents.mcp.messages import MCP_REVISIONS
from agents.settings import DEFAULTS
from contract.cli import add, command_line, duration


def add_url(parser: Any) -> Any:
    """--mcp-url, on the kit's parser and on `python -m kit.cleanup`'s (which closes the sessions there)."""
    return add(
        parser,
        "--mcp-url",
        default=DEFAULTS.mcp_url,
        help="MCP: the server's URL (Streamable HTTP; HTTP+SSE where it refuses the POST), a path on --host "
        "or a URL on its origin",
    )


def add_arguments(protocols: Any) -> None:
    """Into the protocols' group (agents/gateways/options.py): how agents reach and use an MCP server."""
    add_url(protocols)
    add(
        protocols,
        "--mcp-command",
        convert=command_line,
        default=None,
        help="MCP over stdio: the server command each simulated agent launches (instead of --mcp-url)",
    )
    add(
        protocols,
        "--mcp-tool-mix",
        default=None,
        help="MCP: tools to call and their weights, NAME=WEIGHT,... (default: every listed tool alike)",
    )
    add(
        protocols,
        "--mcp-arguments",
        default=None,
        help="MCP: JSON file of tool name -> argument objects (default: made from each input schema)",
    )
    add(
        protocols,
        "--mcp-protocol-version",
        choices=MCP_REVISIONS,
        default=None,
        help="MCP: the protocol revision initialize offers (default: the newest; the server's answer kept)",
    )
    add(
        protocols,
        "--mcp-allow-unsafe-tools",
        action="store_true",
        default=DEFAULTS.mcp_allow_unsafe_tools,
        help="MCP: the default tool mix takes every listed tool, not only those annotated read-only and "
        "closed-world",
    )
    add(
        protocols,
        "--mcp-close-timeout",
        convert=duration,
        default=None,
        help="MCP over stdio: how long a server has to exit once its stdin closes, before SIGTERM, then "
        f"SIGKILL of its process group, e.g. 5s (default {DEFAULTS.mcp_close_timeout:g}s)",
    )
