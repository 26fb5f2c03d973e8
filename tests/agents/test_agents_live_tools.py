"""`--live-tools` history assembly, without a gateway: a ReplayAgent whose model call is a script of the
gateway's answers, its tools the loop's drawn ones. Each test checks the exact messages every call sent:
the gateway's own tool calls and the live results in place of the recorded ones, the recorded user turns
and text answers kept; a text answer where the recording called on skips to its next user turn; calls
the recording did not have are answered and sent again, up to max_steps in a row."""

from __future__ import annotations

import copy
from pathlib import Path
from types import SimpleNamespace

import pytest

from agents.loop.agent_loop import LoopRunner
from agents.loop.tool_deltas import ToolCall
from agents.replay.live_tools import continues_calls, kept, recorded_delta
from agents.replay.recorded_agent import ReplayAgent
from contract.records import RequestRecord
from scenarios.workloads.session_file import RecordedSession, RecordedSessions, RecordedStep
from scenarios.workloads.settings import read_workload
from tests.gateways.harness import agent_user, rows

LIVE = "live result"  # what the loop's drawn tools answer here (their text made fixed)
SYSTEM = {"role": "system", "content": "You are a careful research agent."}
ASK = {"role": "user", "content": "find three facts"}
ANSWER = {"role": "assistant", "content": "three facts"}  # the recorded text answer of the first turn
FOLLOW_UP = {"role": "user", "content": "now summarise them"}


def calls_of(call_id: str) -> dict:
    function = {"name": "lookup", "arguments": '{"query": "x"}'}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def result_of(call_id: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


# what the recorded agent sent: two tool steps, a text answer, then a second user turn
S0 = [SYSTEM, ASK]
S1 = S0 + [calls_of("rec1"), result_of("rec1", "recorded 1")]
S2 = S1 + [calls_of("rec2"), result_of("rec2", "recorded 2")]
S3 = S2 + [ANSWER, FOLLOW_UP]
RECORDED = [S0, S1, S2, S3]


def live_step(call_id: str) -> list[dict]:
    """What the replay appends for a gateway's call: the gateway's call, then the live result."""
    return [calls_of(call_id), result_of(call_id, LIVE)]


def sessions_of(*steps: list[dict]) -> RecordedSessions:
    thinks = [None if i == 0 else 0.0 for i in range(len(steps))]
    recorded = tuple(
        RecordedStep(i + 1, thinks[i], {"messages": m, "max_tokens": 8}, 10, 4, 5.0, thinks[i])
        for i, m in enumerate(steps)
    )
    return RecordedSessions("f.jsonl", "", (RecordedSession("s", recorded),))


def replayed(tmp_path: Path, answers: list[list[str]], steps=RECORDED, live=True, max_steps=10):
    """The session replayed against a script of the gateway's answers (each the call ids it asks, [] for
    a text answer; the last repeats): (the messages of every call sent, the copy's tasks.csv row)."""
    workload_file = tmp_path / "w.toml"
    workload_file.write_text(f"[tools]\nresult = 5\nlatency = 0\n\n[loop]\nmax_steps = {max_steps}\n")
    workload = read_workload(SimpleNamespace(workload_file=str(workload_file)))
    sent: list[list[dict]] = []

    def model_call(draw, history, step):
        sent.append(copy.deepcopy(list(history)))
        ids = answers[min(len(sent), len(answers)) - 1]
        record = RequestRecord(ts=0.0, agent_id="a", operation="chat", ok=True, latency_ms=1.0)
        return record, [ToolCall(i, "lookup", '{"query": "x"}') for i in ids]

    options = {"sessions": sessions_of(*steps), "identical_copies": True, "live_tools": live}
    with agent_user(
        ReplayAgent, "http://127.0.0.1:9", tmp_path / "run", workload=workload, **options
    ) as user:
        user.model_call = model_call
        user.replay(user.settings.sessions.sessions[0])
    (task,) = rows(tmp_path / "run", "tasks.csv")
    return sent, task


@pytest.fixture(autouse=True)
def fixed_results(monkeypatch):
    monkeypatch.setattr(LoopRunner, "result", lambda self: LIVE)


def test_the_gateways_calls_and_live_results_replace_the_recorded_ones_user_turns_kept(tmp_path):
    sent, task = replayed(tmp_path, [["g1"], ["g2"], [], []])
    with_calls = S0 + live_step("g1") + live_step("g2")
    assert sent == [S0, S0 + live_step("g1"), with_calls, with_calls + [ANSWER, FOLLOW_UP]]
    assert (task["end_reason"], task["steps"], task["tool_calls"]) == ("answer", "4", "2")


def test_without_live_tools_every_step_is_sent_as_recorded(tmp_path):
    sent, task = replayed(tmp_path, [["g1"], ["g2"], [], []], live=False)
    assert sent == RECORDED and task["end_reason"] == "answer"


def test_a_text_answer_where_the_recording_called_on_goes_to_its_next_user_turn(tmp_path):
    sent, task = replayed(tmp_path, [[]])
    assert sent == [S0, S0 + [ANSWER, FOLLOW_UP]]
    assert (task["end_reason"], task["steps"], task["tool_calls"]) == ("answer", "2", "0")


def test_calls_the_recording_did_not_have_are_answered_and_sent_again_at_once(tmp_path):
    sent, task = replayed(tmp_path, [["g1"], ["g2"], ["g3", "g4"], [], ["g5"], []])
    before = S0 + live_step("g1") + live_step("g2")
    both = [
        {**calls_of("g3"), "tool_calls": calls_of("g3")["tool_calls"] + calls_of("g4")["tool_calls"]},
        result_of("g3", LIVE),
        result_of("g4", LIVE),
    ]
    turn_two = before + both + [ANSWER, FOLLOW_UP]
    assert sent == [S0, S0 + live_step("g1"), before, before + both, turn_two, turn_two + live_step("g5")]
    assert (task["end_reason"], task["steps"], task["tool_calls"]) == ("answer", "6", "5")


def test_a_gateway_that_never_stops_calling_ends_the_copy_after_max_steps_unrecorded_calls(tmp_path):
    sent, task = replayed(tmp_path, [["g"]], steps=[S0, S1], max_steps=2)
    assert len(sent) == 2 + 2 and sent[-1] == S0 + live_step("g") * 3
    assert (task["end_reason"], task["status"]) == ("max_steps", "failed")
    assert task["error"] == "no answer after 2 steps the recording did not have"


def test_a_history_the_recording_rewrote_is_sent_as_recorded(tmp_path):
    compacted = [SYSTEM, {"role": "user", "content": "summary so far"}, FOLLOW_UP]
    sent, _ = replayed(tmp_path, [["g1"], []], steps=[S0, S1, compacted])
    assert sent == [S0, S0 + live_step("g1"), compacted]


def test_the_recorded_delta_split_into_what_is_replaced_and_what_is_kept():
    assert recorded_delta(S0, S1) == S1[2:] and recorded_delta(S1, S0) is None
    assert recorded_delta([ASK], [SYSTEM, ASK]) is None  # not a prefix: rewritten
    assert continues_calls(S1[2:]) and not continues_calls([ANSWER, FOLLOW_UP])
    context = {"role": "user", "content": "gateway context"}  # a user message inside a loop is kept
    assert kept([calls_of("r"), result_of("r", "x"), context]) == [context]
    assert kept([ANSWER, FOLLOW_UP]) == [ANSWER, FOLLOW_UP]
