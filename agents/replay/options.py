"""Recorded sessions replayed by ReplayAgent (agents/replay/recorded_agent.py): their options, declared
once with their conversions (the file read whole and checked at start), in the workload's group."""

from __future__ import annotations

from typing import Any

from agents.settings import DEFAULTS
from contract.cli import add, comma_list, positive
from scenarios.workloads.session_file import STREAM_ALWAYS, STREAM_RECORDED, RecordedSessions, load_sessions


def recorded_sessions(value: Any, flag: str) -> RecordedSessions:
    """--sessions FILE: every session of the file (the choices among them apply once all are read)."""
    return load_sessions(str(value))


def add_arguments(workload: Any) -> None:
    """Into the workload's group (scenarios/workloads/options.py): what a replay sends."""
    add(
        workload,
        "--sessions",
        convert=recorded_sessions,
        default=None,
        help="a session file (python -m kit.capture) replayed by ReplayAgent: each task one recorded session",
    )
    add(
        workload,
        "--sessions-speed",
        convert=positive,
        default=DEFAULTS.sessions_speed,
        help="replay the sessions' recorded think times this many times faster (default 1)",
    )
    add(
        workload,
        "--sessions-select",
        convert=comma_list,
        default=None,
        help="replay only these recorded sessions: ID[,ID] (the file's `session` names)",
    )
    add(
        workload,
        "--sessions-skip",
        convert=comma_list,
        default=None,
        help="leave out recorded sessions of these statuses: broken (an answer broke off), error (an "
        "HTTP or JSON-RPC error); e.g. broken,error",
    )
    add(
        workload,
        "--sessions-stream",
        choices=(STREAM_RECORDED, STREAM_ALWAYS),
        default=DEFAULTS.sessions_stream,
        help="replay each call streamed or not as recorded, with its recorded stream_options (recorded), "
        "or every call streamed with usage, for a TTFT where the recording did not stream (always)",
    )
    add(
        workload,
        "--identical-copies",
        action="store_true",
        default=DEFAULTS.identical_copies,
        help="replay every copy of a session as recorded (default: a per-copy tag in its first user message)",
    )
    add(
        workload,
        "--live-tools",
        action="store_true",
        default=DEFAULTS.live_tools,
        help="replay: answer the gateway's tool calls live with the workload's [tools] (its MCP server, else "
        "drawn tools) and send its calls and the live results in place of the recorded ones; user turns and "
        "think times as recorded. A text answer where the recording called on: its next user turn; calls "
        "it did not have: answered and sent again, up to [loop] max_steps in a row",
    )
