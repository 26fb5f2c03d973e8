"""Request bodies that cost what is new: a loop's step encodes only the messages it appended,
counted by the History's own counter, and the bytes are exactly what httpx's `json=` sends; through a
real loop against the simulator, an 8-step task with an 80 KB prompt encodes that prompt once; the
agents of one workload encode its shared prefix and tool schemas once in all (its parts' counter)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from httpx._content import encode_json
from locust.env import Environment

from agents.calibration import Calibration
from agents.gateways.model_call import CallParts
from agents.gateways.openai_chat import ChatAgent
from agents.gateways.responses import ResponsesAgent
from agents.loop.tool_deltas import ToolCall
from agents.run_context import new_context
from agents.settings import AgentSettings
from agents.wire.request_body import Encoded, History, TextMessage, dumps, encode_body, message_json
from agents.workload import AgentWorkload
from scenarios.workloads.distributions import fixed
from scenarios.workloads.settings import WorkloadSettings
from scenarios.workloads.synthetic_text import VOCABULARY, TextPool
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


SHARED_WORKLOAD = """[input]
distribution = "fixed"
mean = 600

[prefix]
tokens = 300

[tools]
count = 4
schema_tokens = 150
result = 20
latency = "0s"

[loop]
max_steps = 10
"""
AGENTS = 3
TOOL_STEPS = 2  # each task: 2 steps answered with a tool call, then an answer


class Scripted:
    """Answers each task's first TOOL_STEPS calls with a call of tool_1, then with text, sending nothing:
    keeps each body's history, its bytes, its plain values (what `json=` would be given) and the history's
    counter then."""

    sent: list

    def send(self, record, body, session, timing):
        key = "messages" if "messages" in body else "input"
        plain = {k: v.value if isinstance(v, Encoded) else v for k, v in body.items()}
        plain[key] = list(body[key])
        self.sent.append((body[key], encode_body(body), plain, body[key].encoded_bytes))
        calls = len(self.sent) % (TOOL_STEPS + 1)
        return [ToolCall(f"call_{calls}", "tool_1", '{"query": "x"}')] if calls else []


class ScriptedChat(Scripted, ChatAgent):
    abstract = True


class ScriptedResponses(Scripted, ResponsesAgent):
    abstract = True


@pytest.mark.parametrize("user_class", [ScriptedChat, ScriptedResponses], ids=["chat", "responses"])
def test_agents_of_one_workload_encode_its_prefix_and_tools_once_in_all(tmp_path, user_class):
    """3 agents, a task of 3 steps each: the workload's shared parts (the prefix's system message and the
    4 tool schemas) are encoded once for all of them, each agent's history encodes only its own messages,
    each step only what it appended, and every body is the bytes httpx would send."""
    environment = Environment(user_classes=[user_class], host="http://127.0.0.1:9")
    workload = loop_settings(tmp_path, SHARED_WORKLOAD)
    new_context(environment, AgentSettings(run_id="r1", run_dir=tmp_path, workload=workload))
    agents = [user_class(environment) for _ in range(AGENTS)]
    for agent in agents:
        agent.sent = []
        (agent.respond if user_class is ScriptedResponses else agent.chat_stream)()
    parts = agents[0].workload.shared.parts
    assert all(a.workload.shared.parts is parts for a in agents)
    prefix, tools = parts.kept.values()
    assert prefix.value["content"] == agents[0].workload.shared.prefix and len(tools.value) == 4
    assert parts.encoded_bytes == len(dumps(prefix.value)) + len(dumps(tools.value))  # once, not 3 times
    for agent in agents:
        assert len(agent.sent) == TOOL_STEPS + 1
        history = agent.sent[0][0]
        assert history[0] is prefix.value and history.parts[0][0] is prefix.json
        expected, counted = 0, 1  # the prefix is never counted: the workload's parts encoded it
        for sent, body, plain, encoded in agent.sent:
            messages = plain["messages" if "messages" in plain else "input"]
            assert sent is history and body == httpx_bytes(plain) == dumps(plain)
            expected += sum(len(dumps(m)) for m in messages[counted:])
            counted = len(messages)
            assert encoded == expected  # step k: the messages it appended, only


def test_a_replaced_shared_prefix_is_encoded_anew():
    prefix = Encoded({"role": "system", "content": "shared"}, dumps({"role": "system", "content": "shared"}))
    history = History.after([prefix], [{"role": "user", "content": "go"}])
    assert encode_body({"messages": history}) == httpx_bytes({"messages": list(history)})
    assert history.encoded_bytes == len(dumps(history[1]))
    history[0] = {"role": "system", "content": "other"}
    assert encode_body({"messages": history}) == httpx_bytes({"messages": list(history)})
    assert history.encoded_bytes == len(dumps(history[1])) + len(dumps(history[0])) + len(dumps(history[1]))


def test_one_call_agents_send_the_shared_prefix_as_encoded_once(tmp_path):
    environment = Environment(user_classes=[ChatAgent], host="http://127.0.0.1:9")
    workload = loop_settings(tmp_path, SHARED_WORKLOAD.split("[tools]")[0])  # no tools: one call a request
    new_context(environment, AgentSettings(run_id="r1", run_dir=tmp_path, workload=workload))
    for agent in [ChatAgent(environment) for _ in range(AGENTS)]:
        draw = agent.workload.next_request(agent.tagged_prompt())
        body = agent.request_body(CallParts(True, draw, agent.session_key))
        assert encode_body(body) == httpx_bytes({**body, "messages": list(draw.messages)})
        (prefix,) = agent.workload.shared.parts.kept.values()
        assert body["messages"].parts[0][0] is prefix.json and body["messages"].encoded_bytes == len(
            dumps(draw.messages[1])
        )
    assert agent.workload.shared.parts.encoded_bytes == len(dumps(prefix.value))


@pytest.mark.parametrize(
    ("head", "plain", "tail"),
    [
        ("[agent 1 req 2] ", " the and for", ""),
        ('say "hi" \\ \n\t\x00', " café naïve ✓", ' "end"\x1f'),  # escapes around, UTF-8 within
        ("", "", ""),
    ],
)
def test_a_text_message_is_the_json_dumps_would_make(head, plain, tail):
    message = TextMessage.of("user", head, plain, tail)
    assert message == {"role": "user", "content": head + plain + tail}
    assert b"".join(message_json(message)) == dumps(dict(message)) == httpx_bytes(dict(message))
    body = {"model": "m", "messages": [{"role": "system", "content": 'a "b"'}, message], "stream": True}
    assert encode_body(body) == httpx_bytes({**body, "messages": [dict(m) for m in body["messages"]]})
    history = History([message])
    assert encode_body({"m": history}) == dumps({"m": [dict(message)]})


def test_the_synthetic_pool_needs_no_escaping_and_its_drawn_prompts_are_made_exact(tmp_path):
    """TextMessage's promise, held: the pool's text (every prompt is a slice of it) has no character JSON
    escapes, and a drawn prompt's JSON is what `dumps` makes of it (tag first; a trace's blocks, tag last)."""
    pool = TextPool("seed", 300_000)
    assert dumps(pool.text) == b'"' + pool.text.encode() + b'"'
    assert all(dumps(word) == f'"{word}"'.encode() for word in VOCABULARY)
    for options in ({"input_tokens": 2000}, {"input_tokens": 2000, "prefix_tokens": 100}):
        agent = AgentWorkload(
            WorkloadSettings(
                input=fixed(options["input_tokens"]), prefix_tokens=options.get("prefix_tokens", 0)
            ),
            64,
            "w0/a1",
            '[agent "1"]',
            Calibration(),
        )
        draw = agent.next_request("unused")
        user = draw.messages[-1]
        assert isinstance(user, TextMessage) and b"".join(message_json(user)) == dumps(dict(user)), options
        assert user["content"].startswith('[agent "1" req 1]')
    traced = agent._synthetic(500, 8, SimpleNamespace(hash_ids=(3, 4), session_id=None))
    user = traced.messages[-1]
    assert (
        isinstance(user, TextMessage)
        and b"".join(message_json(user)) == dumps(dict(user))
        and user["content"].endswith("]")
    )
