"""Before load, for `--gateway mcp`: one MCP session of the kit's own opened on the server (initialize,
tools/list, and the lists the mix draws from), the tool mix and the arguments checked against what it
lists, and the start line saying what the run calls and what the safe default left out (agents/mcp/mix.py).
A mix the server's lists do not fit is bad input: one line, exit 2, before any load and any run
directory. A server that does not open the session is said in one line and the run goes on: its agents'
rows say what fails (and a run with no tools/call answered ends 7, kit/end_checks.py).
"""

from __future__ import annotations

import sys

from agents.base import read_bounds
from agents.mcp.mix import choose, tool_mix
from agents.mcp.probe import listed, opened, probe_client, probe_session
from contract.errors import one_line
from kit.settings import KitSettings
from lifecycle.target import Target

MCP_AGENT = "agents.mcp.agent:McpAgent"


def calls_mcp_tools(settings: KitSettings) -> bool:
    """Whether the run's work is MCP tool calls (the MCP agent's; capacity and churn open sessions and
    call no tool)."""
    return MCP_AGENT in settings.preset.agent_classes and not settings.built_profile.driver


def check_mcp_mix(settings: KitSettings, target: Target) -> None:
    """The mix checked against the server's lists (InputError), the start line written; nothing when the
    run calls no MCP tool."""
    if not calls_mcp_tools(settings):
        return
    agent = settings.agent
    mix = tool_mix(agent.mcp_tool_mix, agent.mcp_arguments, agent.mcp_allow_unsafe_tools)
    client = None if agent.mcp_command else probe_client(agent, target.url, agent.request_timeout)
    session = probe_session(agent, client, read_bounds(agent))
    try:
        opened(session)
        tools = listed(session, "tools/list")
        lists = {method: listed(session, method) for method in mix.lists_needed()}
    except Exception as exc:  # the server's trouble, not the user's input: the agents meet it too
        where = agent.mcp_command or f"{target.url}{agent.mcp_url}"
        sys.stderr.write(f"loadkit: warning: MCP server {where}: no session before load ({one_line(exc)})\n")
        return
    finally:
        session.abandon()
        if client is not None:
            client.close()
    sys.stderr.write(f"loadkit: {choose(mix, tools, lists).start_line()}\n")
