"""Session files read for replay: a good one into its sessions and steps, and every way a file is not one
refused in one line that names the file, the line and the field."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from contract.schema import SESSION_FORMAT as FORMAT
from scenarios.errors import WorkloadError
from scenarios.workloads import session_file
from scenarios.workloads.session_file import load_sessions, select_sessions

HEADER = {"format": FORMAT, "upstream": "http://127.0.0.1:8000"}
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def call(session: str = "s1", step: int = 0, offset: float = 0.0, **over) -> dict:
    line = {
        "offset_s": offset,
        "session": session,
        "step": step,
        "think_ms": None if step == 0 else 120.0,
        "api": "chat",
        "request": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 9},
        "response": {
            "status": 200,
            "latency_ms": 41.5,
            "usage": {"prompt_tokens": 12, "completion_tokens": 9},
        },
    }
    line.update(over)
    return line


def write(tmp_path, *lines: object, raw: bytes = b"") -> str:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(json.dumps(v).encode() + b"\n" for v in lines) + raw)
    return str(path)


def test_a_recording_reads_into_sessions_in_step_order(tmp_path):
    path = write(tmp_path, HEADER, call("a", 0, 0.0), call("b", 0, 0.5), call("a", 1, 1.0), call("b", 1, 2.0))
    recorded = load_sessions(path)
    assert [s.name for s in recorded.sessions] == ["a", "b"]
    first, second = recorded.sessions[0].steps
    assert (first.think_s, second.think_s) == (None, 0.12)
    assert (first.prompt_tokens, first.completion_tokens, first.latency_ms) == (12, 9, 41.5)
    assert first.messages == [{"role": "user", "content": "hi"}] and first.line == 2
    assert recorded.describe() == {
        "file": path,
        "upstream": HEADER["upstream"],
        "sessions": 2,
        "calls": 4,
        "tool_calls": 0,
        "left_out": 0,
    }


def tool_call(session: str, step: int, offset: float, think_ms: float, **over) -> dict:
    line = {
        "offset_s": offset,
        "session": session,
        "step": step,
        "think_ms": think_ms,
        "api": "mcp",
        "request": {"method": "tools/call", "params": {"name": "lookup", "arguments": {"query": f"q{step}"}}},
        "response": {"status": 200, "latency_ms": 30.0, "isError": False, "content": "x", "content_chars": 1},
    }
    line.update(over)
    return line


def test_tool_calls_read_into_their_places_between_the_model_steps(tmp_path):
    lines = [
        tool_call("m", 0, 0.0, None),  # an MCP-only session
        call("a", 0, 0.0),
        tool_call("a", 1, 0.1, 5.0),
        tool_call("a", 2, 0.09, 0.0),  # sent before the previous one, ended after it: concurrent calls
        call("a", 3, 0.2),
        tool_call("a", 4, 0.3, 7.0, response={"status": 200, "rpc_error": {"code": -32602, "message": "no"}}),
    ]
    recorded = load_sessions(write(tmp_path, HEADER, *lines))
    mcp_only, joined = recorded.sessions
    assert mcp_only.steps == () and [c.after_steps for c in mcp_only.tool_calls] == [0]
    assert [c.after_steps for c in joined.tool_calls] == [1, 1, 2]
    assert [c.arguments for c in joined.tool_calls] == [{"query": "q1"}, {"query": "q2"}, {"query": "q4"}]
    assert [c.answered for c in joined.tool_calls] == [True, True, False]
    assert [c.line for c in joined.tool_calls_after(1)] == [4, 5] and joined.tool_calls_after(0) == ()
    first, second = joined.steps
    # the model step's think after the tool calls; its gap from the previous model answer: 5 + 30 + 0 + 30
    # ms of tool calls, then its own 120 ms
    assert second.think_s == 0.12 and second.gap_s == pytest.approx(0.185) and first.gap_s is None
    assert recorded.describe()["tool_calls"] == 4 and recorded.describe()["calls"] == 2


def test_a_session_holds_each_message_its_steps_resend_once(tmp_path):
    system, task = {"role": "system", "content": "be brief"}, {"role": "user", "content": "do it"}
    answer, result = {"role": "assistant", "content": "looked"}, {"role": "tool", "content": "42"}
    steps = [
        [system, task],
        [system, task, answer, result],
        [system, {"role": "user", "content": "new"}, answer],
    ]
    lines = [call("a", i, float(i), request={"model": "m", "messages": m}) for i, m in enumerate(steps)]
    first, second, third = load_sessions(write(tmp_path, HEADER, *lines)).sessions[0].steps
    assert all(a is b for a, b in zip(first.messages, second.messages, strict=False))
    assert second.messages[2] is not first.messages[0] and third.messages[0] is first.messages[0]
    assert third.messages[2] is not second.messages[2]  # past the first that differs, each is its own
    assert [m["content"] for m in third.messages] == ["be brief", "new", "looked"]  # as the file has them


@pytest.mark.parametrize(
    ("lines", "raw", "says"),
    [
        ([], b"", ":1: not a session file"),
        ([{"format": "other"}], b"", ":1: not a session file"),
        ([HEADER], b"", "records no call"),
        ([HEADER], b'{"session": "s", "offset_s": 0', ":2: not JSON"),  # a line cut short
        ([HEADER], b"\xff\xfe\x00binary\n", ":2: not UTF-8 text"),
        ([HEADER, call(step=0, offset=5.0), call(step=1, offset=4.0)], b"", ":3: offset_s 4.0: before"),
        ([HEADER, call(step=1)], b"", ":2: session 's1' step 1: expected 0"),
        ([HEADER, call(session="")], b"", ":2: session: expected a name"),
        ([HEADER, call(offset=-1)], b"", ":2: offset_s -1: expected seconds >= 0"),
        ([HEADER, call(api="responses")], b"", ":2: api 'responses': replay speaks chat, mcp for now"),
        (
            [HEADER, tool_call("s", 0, 0.0, None, request={"method": "ping"})],
            b"",
            ":2: request: expected a tools",
        ),
        (
            [HEADER, tool_call("s", 0, 0.0, None, request={"method": "tools/call", "params": {"name": "x"}})],
            b"",
            ":2: request.params.arguments: expected an object",
        ),
        ([HEADER, call(request={"messages": []})], b"", ":2: request.messages: expected a non-empty list"),
        (
            [HEADER, call(request={"messages": [{"role": "robot", "content": "x"}]})],
            b"",
            ":2: messages[0].role 'robot': use one of system",
        ),
        ([HEADER, call(step=0), call(step=1, think_ms=-3)], b"", ":3: think_ms -3: expected milliseconds"),
    ],
)
def test_a_file_that_is_not_a_recording_is_refused_naming_the_line(tmp_path, lines, raw, says):
    with pytest.raises(WorkloadError) as refused:
        load_sessions(write(tmp_path, *lines, raw=raw))
    assert says in str(refused.value) and "\n" not in str(refused.value)


def test_a_line_past_the_cap_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(session_file, "MAX_LINE_BYTES", 1000)
    path = write(tmp_path, HEADER, call(request={"messages": [{"role": "user", "content": "x" * 5000}]}))
    with pytest.raises(WorkloadError, match=r":2: a line over"):
        load_sessions(path)


def test_a_missing_file_is_one_line(tmp_path):
    with pytest.raises(WorkloadError, match="cannot read the session file"):
        load_sessions(str(tmp_path / "none.jsonl"))


def test_a_fifo_a_device_and_a_directory_are_refused_without_opening_them(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(WorkloadError, match="not a regular file"):
            load_sessions(str(path))  # a FIFO opened would block here


def test_sessions_are_chosen_by_name_and_left_out_by_status(tmp_path):
    lines = [
        HEADER,
        {
            "session": "ok",
            "offset_s": 0,
            "step": 0,
            "api": "chat",
            "request": REQUEST,
            "response": {"status": 200},
        },
        {
            "session": "cut",
            "offset_s": 0,
            "step": 0,
            "api": "chat",
            "request": REQUEST,
            "response": {"status": 200, "broken": "reset"},
        },
        {
            "session": "probe",
            "offset_s": 0,
            "step": 0,
            "api": "chat",
            "request": REQUEST,
            "response": {"status": 401},
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    recorded = load_sessions(str(path))
    assert [s.status for s in recorded.sessions] == ["ok", "broken", "error"]
    kept = select_sessions(recorded, (), ("broken", "error"))
    assert [s.name for s in kept.sessions] == ["ok"] and kept.describe()["left_out"] == 2
    assert [s.name for s in select_sessions(recorded, ("probe", "ok"), ()).sessions] == ["probe", "ok"]
    with pytest.raises(WorkloadError, match="--sessions-select 'nope': no such session"):
        select_sessions(recorded, ("nope",), ())
    with pytest.raises(WorkloadError, match="leave no session"):
        select_sessions(recorded, ("cut",), ("broken",))
    with pytest.raises(WorkloadError, match="--sessions-skip 'late': use broken or error"):
        select_sessions(recorded, (), ("late",))
