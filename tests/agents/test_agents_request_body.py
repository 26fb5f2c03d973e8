"""Request bodies that cost what is new (issue 34): a loop's step encodes only the messages it appended,
counted by the History's own counter, and the bytes are exactly what httpx's `json=` sends; through a
real loop against the simulator, an 8-step task with an 80 KB prompt encodes that prompt once."""

from __future__ import annotations

import pytest
from httpx._content import encode_json

from agents.openai_chat import ChatAgent
from agents.request_body import History, dumps, encode_body
from agents.responses import ResponsesAgent
from tests.agents.test_agents_loop import MODEL, loop_settings
from tests.gateways.harness import agent_user, rows

PROMPT = "a long shared context, " * 3500  # 80.5 KB
STEPS = 8


def httpx_bytes(body) -> bytes:
    return b"".join(encode_json(body)[1])


def grow(history: History, step: int) -> None:
    call = {"id": f"call_{step}", "type": "function", "function": {"name": "f", "arguments": '{"q": "é"}'}}
    history += [{"role": "assistant", "content": None, "tool_calls": [call]}]
    history += [{"role": "tool", "tool_call_id": f"call_{step}", "content": f"result {step} ✓"}]


def test_each_step_encodes_only_what_it_appended_and_sends_the_bytes_httpx_would():
    history = History([{"role": "system", "content": PROMPT}, {"role": "user", "content": "go"}])
    expected, sent = 0, 0
    for step in range(1, STEPS + 1):
        body = {"model": "m", "messages": history, "stream": True, "tools": [{"type": "function"}]}
        assert encode_body(body) == httpx_bytes({**body, "messages": list(history)})
        expected += sum(len(dumps(m)) for m in history[sent:])  # what this step appended, only
        sent = len(history)
        assert history.encoded_bytes == expected
        grow(history, step)
    assert history.encoded_bytes < 1.1 * len(PROMPT)  # re-encoding the whole history would be ~8x


def test_a_replaced_message_is_encoded_anew_and_the_body_stays_exact():
    history = History([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])
    encode_body({"messages": history})
    history[1] = {"role": "assistant", "content": "changed"}
    assert encode_body({"messages": history}) == httpx_bytes({"messages": list(history)})
    history.pop()
    assert encode_body({"messages": history}) == httpx_bytes({"messages": list(history)})
    assert encode_body([1, {"a": float("1.5")}]) == httpx_bytes([1, {"a": 1.5}])
    with pytest.raises(ValueError):
        encode_body({"messages": History([{"x": float("nan")}])})  # as httpx refuses NaN


class Watched:
    """Keeps each model call's history: the test reads the task's own counter after it."""

    histories: list

    def model_call(self, draw, history, step):
        self.histories.append(history)
        return super().model_call(draw, history, step)  # type: ignore[misc]


class WatchedChat(Watched, ChatAgent):
    abstract = True


class WatchedResponses(Watched, ResponsesAgent):
    abstract = True


@pytest.mark.e2e
@pytest.mark.parametrize("user_class", [WatchedChat, WatchedResponses], ids=["chat", "responses"])
def test_an_8_step_task_through_the_simulator_encodes_its_80_kb_prompt_once(simulator, tmp_path, user_class):
    sim = simulator(*MODEL, "--tool-call-steps", str(STEPS - 1))
    run_dir = tmp_path / "run"
    options = {"responses_stream": True} if user_class is WatchedResponses else {}
    with agent_user(
        user_class, sim.url, run_dir, workload=loop_settings(tmp_path), prompt=PROMPT, **options
    ) as user:
        user.histories = []
        (user.respond if user_class is WatchedResponses else user.chat_stream)()
    (task,) = rows(run_dir, "tasks.csv")
    assert (task["end_reason"], task["steps"]) == ("answer", str(STEPS)), task
    history = user.histories[0]
    assert all(h is history for h in user.histories) and isinstance(history, History)
    once = sum(len(dumps(m)) for m in history)  # the answer's step appended nothing: all were sent
    assert len(PROMPT) < once < 1.2 * len(PROMPT)
    assert history.encoded_bytes == once  # each message once: encoding each step's whole body is ~8x
    tokens_in = [int(r["tokens_in"]) for r in rows(run_dir, "requests.csv")]
    assert len(tokens_in) == STEPS and tokens_in == sorted(tokens_in)  # the server saw the grown history


def test_a_fork_encodes_only_its_brief_and_the_parent_is_untouched():
    parent = History([{"role": "system", "content": PROMPT}, {"role": "user", "content": "go"}])
    encode_body({"messages": parent})
    brief = {"role": "user", "content": "[sub-agent 1 of 2] Take part 1 of the plan."}
    child = parent.extended([brief])
    assert encode_body({"messages": child}) == httpx_bytes({"messages": list(child)})
    assert child.encoded_bytes == len(dumps(brief)) and list(parent) == list(child)[:2] and len(parent) == 2
