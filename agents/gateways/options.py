"""The gateway protocols' own options (each read by its agent here through AgentSettings, whose fields
are these options' dests), declared once with their conversions; MCP's are agents/mcp/options.py's."""

from __future__ import annotations

from typing import Any

from agents.mcp import options as mcp_options
from agents.settings import DEFAULTS
from contract.cli import add, command_line, json_object


def add_arguments(parser: Any) -> None:
    """The "loadkit: protocols" group: chat, Responses, Hermes runs, LangGraph, A2A, ACP, spec, MCP and
    the Hermes Kanban board."""
    protocols = parser.add_argument_group("loadkit: protocols", "options of particular gateway protocols")
    add(
        protocols,
        "--no-chat-stream",
        dest="chat_stream",
        action="store_false",
        default=DEFAULTS.chat_stream,
        help="chat completions without streaming (usage and cost from the body)",
    )
    add(
        protocols,
        "--no-responses-stream",
        dest="responses_stream",
        action="store_false",
        default=DEFAULTS.responses_stream,
        help="Responses API without streaming",
    )
    add(
        protocols,
        "--runs-follow",
        choices=("events", "poll"),
        default=DEFAULTS.runs_follow,
        help="Hermes /v1/runs: follow a run by its SSE events or by polling",
    )
    add(
        protocols,
        "--assistant-id",
        default=None,
        help="LangGraph assistant (graph) id (default: the first the server lists)",
    )
    add(
        protocols,
        "--langgraph-input",
        convert=json_object,
        default=None,
        help="LangGraph run input as JSON",
    )
    add(
        protocols,
        "--langgraph-join",
        action="store_true",
        default=DEFAULTS.langgraph_join,
        help="LangGraph: wait with /join instead of polling the run",
    )
    add(
        protocols,
        "--a2a-version",
        choices=("auto", "1.0", "0.3"),
        default=DEFAULTS.a2a_version,
        help="A2A protocol version (auto: 1.0, falling back to 0.3)",
    )
    add(protocols, "--a2a-path", default=DEFAULTS.a2a_path, help="A2A JSON-RPC path")
    add(
        protocols,
        "--a2a-stream",
        action="store_true",
        default=DEFAULTS.a2a_stream,
        help="A2A: SendStreamingMessage instead of SendMessage",
    )
    add(
        protocols,
        "--acp-command",
        convert=command_line,
        default=None,
        help="ACP: the agent command each simulated agent launches (JSON-RPC over its stdio)",
    )
    add(protocols, "--spec-file", default=None, help="REST gateway spec (TOML); also --gateway spec:FILE")
    mcp_options.add_arguments(protocols)
    add(
        protocols,
        "--hermes-command",
        convert=command_line,
        default=DEFAULTS.hermes_command,
        help="Hermes Kanban: the Hermes CLI to run (`hermes kanban ...`), e.g. a venv's bin/hermes",
    )
    add(protocols, "--kanban-board", default=None, help="Hermes Kanban: board slug (default: current)")
    add(
        protocols,
        "--kanban-assignee",
        default=DEFAULTS.kanban_assignee,
        help='Hermes Kanban: profile assigned to created tasks, which the dispatcher needs ("" for none)',
    )
