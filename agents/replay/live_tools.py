"""`--live-tools` (docs/record-replay.md): what a replay keeps of each recorded step when the gateway's own
tool calls are answered live. A recorded step's messages are the step before's plus what the recorded
agent appended: the recorded answer (tool calls, or text), the tool results, the next user turn. The
replay replaces the recorded tool calls and their results with the gateway's calls and the live results,
and keeps the rest as recorded: user, system and developer messages, and a recorded text answer (what the
recorded user's next message replies to; the kit's stream readers keep no answer text).

Pure: message lists in, message lists out. The agent (agents/replay/recorded_agent.py) sends, waits and runs
the
tools (the agent loop's own, agents/loop/agent_loop.py).
"""

from __future__ import annotations


def recorded_delta(previous: list[dict], messages: list[dict]) -> list[dict] | None:
    """What a recorded step's messages append to the step before's; None when they do not start with
    them (the recorded agent rewrote its history: compacted or trimmed it)."""
    size = len(previous)
    if len(messages) < size or messages[:size] != previous:
        return None
    return messages[size:]


def continues_calls(delta: list[dict]) -> bool:
    """Whether the recording went on with tool results here (its step before was answered with tool
    calls), rather than with a new user turn after a text answer."""
    return any(m.get("role") == "tool" for m in delta) or (bool(delta) and asks_calls(delta[0]))


def kept(delta: list[dict]) -> list[dict]:
    """The recorded messages a live replay sends as recorded: all but the recorded tool calls and results."""
    return [m for m in delta if m.get("role") != "tool" and not asks_calls(m)]


def asks_calls(message: dict) -> bool:
    return message.get("role") == "assistant" and bool(message.get("tool_calls"))
