"""A replayed copy's steps cost what the recording appended: the session file holds each resent message
once (scenarios/workloads/session_file.py share_prefix), the copy's tag is made once, and the copy's History
encodes
each message the first time it is sent, read through its own counter; the bytes are those of the whole
list encoded anew."""

from __future__ import annotations

import json
from pathlib import Path

from agents.replay.recorded_agent import ReplayAgent
from agents.wire.request_body import History, dumps, encode_body
from contract.records import RequestRecord
from contract.schema import SESSION_FORMAT
from scenarios.workloads.session_file import load_sessions
from tests.gateways.harness import agent_user

SYSTEM = {"role": "system", "content": "You are a careful research agent. " * 40}
TASK = {"role": "user", "content": "find three facts"}


def step_messages(k: int) -> list[dict]:
    """Step k's history: the system prompt, the task, then k tool calls with their results."""
    messages = [SYSTEM, TASK]
    for i in range(k):
        messages.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": f"result {i} " * 30})
    return messages


def recording(tmp_path: Path, steps: int) -> str:
    path = tmp_path / "s.jsonl"
    lines = [{"format": SESSION_FORMAT, "upstream": "http://127.0.0.1:8000"}]
    for k in range(steps):
        request = {"model": "m", "messages": step_messages(k), "max_tokens": 8}
        lines.append(
            {
                "offset_s": k,
                "session": "s",
                "step": k,
                "think_ms": None if k == 0 else 0.0,
                "api": "chat",
                "request": request,
                "response": {"status": 200},
            }
        )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return str(path)


def test_each_replayed_step_encodes_only_the_messages_it_appended(tmp_path):
    sessions = load_sessions(recording(tmp_path, 4))
    encoded: list[tuple[int, bytes, list[dict]]] = []  # per call: bytes newly encoded, the body, messages

    def model_call(draw, history, step):
        assert isinstance(history, History)
        before = history.encoded_bytes
        sent = encode_body({"messages": history})
        encoded.append((history.encoded_bytes - before, sent, list(history)))
        return RequestRecord(ts=0.0, agent_id="a", operation="chat", ok=True, latency_ms=1.0), []

    with agent_user(ReplayAgent, "http://127.0.0.1:9", tmp_path / "run", sessions=sessions) as user:
        user.model_call = model_call
        user.replay(sessions.sessions[0])
    tagged = encoded[0][2][1]
    assert tagged["content"].startswith("[copy ") and tagged["content"].endswith(TASK["content"])
    assert encoded[0][0] == sum(len(dumps(m)) for m in [SYSTEM, tagged])  # the first step: all of it
    for k, (new_bytes, sent, messages) in enumerate(encoded[1:], 1):
        appended = step_messages(k)[-2:]
        assert new_bytes == sum(len(dumps(m)) for m in appended), k  # the tool call and result only
        assert (
            sent == dumps({"messages": messages}) and messages[1] is tagged
        )  # the bytes of the list; one tag a copy
