"""Each agent's draws from the workload, without a network: the default is today's fixed prompt, the same
seed and stream give the same prompts, other streams (agents, workers) other ones, sizes follow the
calibration, a shared prefix is one text for every agent, think time and trace lines as the workload says."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from locust import between
from locust.env import Environment

from agents.base import thinking
from agents.calibration import Calibration
from agents.gateways.model_call import CallParts
from agents.gateways.openai_chat import ChatAgent
from agents.run_context import new_context
from agents.settings import AgentSettings
from agents.workload import AgentWorkload, agent_workload
from scenarios.workloads.distributions import Distribution, fixed
from scenarios.workloads.settings import WorkloadSettings, read_workload

TAG = "[agent 1-1 run r]"


def drawer(workload: WorkloadSettings, stream: str = "w0/a1", calibration: Calibration | None = None):
    return AgentWorkload(workload, 64, stream, TAG, calibration or Calibration())


def texts(agent: AgentWorkload, n: int) -> list[str]:
    return [agent.next_request("unused").messages[-1]["content"] for _ in range(n)]


SIZED = WorkloadSettings(input=Distribution("lognormal", 2000, 600), output=fixed(100), seed=7)


def test_with_no_workload_an_agent_sends_its_fixed_prompt_and_max_tokens():
    draw = drawer(WorkloadSettings()).next_request(f"{TAG} hello")
    assert draw.messages == ({"role": "user", "content": f"{TAG} hello"},)
    assert (draw.max_tokens, draw.asked_in, draw.asked_out, draw.sized) == (64, None, 64, False)
    assert draw.asked(sends_max_tokens=False) == {"asked_tokens_in": None, "asked_tokens_out": None}


def test_the_default_chat_body_is_what_the_kit_always_sent():
    environment = Environment(user_classes=[ChatAgent], host="http://127.0.0.1:9")
    new_context(environment, AgentSettings(run_id="r1"))
    agent = ChatAgent(environment)
    draw = agent.workload.next_request(agent.tagged_prompt())
    body = agent.request_body(CallParts(True, draw, agent.session_key))
    prompt = "Summarise the state of the task board in one sentence."
    assert body == {
        "model": "sim-model",
        "messages": [{"role": "user", "content": f"[agent {agent.agent_id} run r1] {prompt}"}],
        "stream": True,
        "max_tokens": 64,
        "user": agent.session_key,
        "stream_options": {"include_usage": True},
    }


def test_the_same_seed_and_stream_draw_the_same_prompts():
    assert texts(drawer(SIZED), 20) == texts(drawer(SIZED), 20)


def test_other_agents_and_other_workers_draw_other_prompts():
    streams = [f"w{w}/a{a}" for w in range(2) for a in range(1, 6)]
    drawn = [text for stream in streams for text in texts(drawer(SIZED, stream), 20)]
    assert len(set(drawn)) == len(drawn) == 200


def test_another_seed_draws_other_prompts():
    other = WorkloadSettings(input=SIZED.input, output=SIZED.output, seed=8)
    assert not set(texts(drawer(SIZED), 10)) & set(texts(drawer(other), 10))


def test_a_prompt_is_its_asked_size_at_the_calibrated_ratio_its_numbered_tag_included():
    calibration = Calibration()
    agent = drawer(SIZED, calibration=calibration)
    for _ in range(50):
        draw = agent.next_request("unused")
        assert abs(draw.chars - draw.asked_in * 4.0) <= 3
        assert draw.messages[0]["content"].startswith(f"{TAG[:-1]} req {agent.sized_drawn}]")
    calibration.observe(9000, 2000)  # this gateway counts 4.5 characters a token
    draw = agent.next_request("unused")
    assert calibration.chars_per_token == pytest.approx(4.5, rel=0.003)
    assert draw.chars == pytest.approx(draw.asked_in * calibration.chars_per_token, abs=3)


def test_calibration_keeps_its_ratio_on_a_grid_and_sets_implausible_replies_aside():
    calibration = Calibration()
    calibration.observe(8001, 2001)  # the simulator's ceil(chars / 4)
    assert calibration.chars_per_token == 4.0  # 3.998 rounds to the grid's 4.0: the same cut every run
    calibration.observe(8000, 6000)  # a gateway that added 4,000 tokens of its own
    assert calibration.chars_per_token == 4.0 and calibration.implausible == 1
    assert calibration.describe()["responses"] == 1


def test_a_shared_prefix_is_one_system_text_for_every_agent_inside_the_asked_size():
    workload = WorkloadSettings(input=fixed(3000), prefix_tokens=1000, seed=3)
    draws = [drawer(workload, f"w0/a{a}").next_request("unused") for a in range(1, 4)]
    systems = {d.messages[0]["content"] for d in draws}
    assert len(systems) == 1 and abs(len(systems.pop()) - 4000) <= 4
    assert all(d.messages[0]["role"] == "system" and abs(d.chars - 12000) <= 3 for d in draws)
    assert len({d.messages[1]["content"] for d in draws}) == 3


def test_output_sizes_are_drawn_and_sent_as_max_tokens():
    workload = WorkloadSettings(output=Distribution("uniform", 200, low=100, high=300), seed=1)
    agent = drawer(workload)
    draws = [agent.next_request("fixed prompt") for _ in range(200)]
    assert all(100 <= d.max_tokens == d.asked_out <= 300 for d in draws)
    assert len({d.max_tokens for d in draws}) > 50 and draws[0].asked_in is None


def test_a_dataset_conversation_is_sent_as_it_is(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(f'{{"messages": [{{"role": "user", "content": "q{i}"}}]}}\n' for i in range(5)))
    ordered = read_workload(SimpleNamespace(dataset=str(path), dataset_order="sequential"))
    agent = drawer(ordered)
    assert [agent.next_request("x").messages[0]["content"] for _ in range(7)] == [
        "q0",
        "q1",
        "q2",
        "q3",
        "q4",
        "q0",
        "q1",
    ]
    sampled = drawer(read_workload(SimpleNamespace(dataset=str(path), seed="4")))
    picks = [sampled.next_request("x").messages[0]["content"] for _ in range(40)]
    assert set(picks) == {f"q{i}" for i in range(5)} and picks != sorted(picks)


def test_a_trace_line_gives_the_size_the_session_and_the_shared_blocks(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        '{"timestamp": 0, "input_length": 1024, "output_length": 9, "hash_ids": [5, 6], "session_id": "s"}\n'
        '{"timestamp": 10, "input_length": 1536, "output_length": 7, "hash_ids": [5, 6, 8]}\n'
    )
    workload = read_workload(SimpleNamespace(trace=str(path)))
    first, second = (drawer(workload, f"w0/a{a}").next_request("x", arrival=a - 1) for a in (1, 2))
    assert (first.asked_in, first.max_tokens, first.session) == (1024, 9, "s")
    assert (second.asked_in, second.max_tokens, second.session) == (1536, 7, None)
    shared = first.messages[0]["content"][: 2 * 512 * 4 - len(TAG) - 8]
    assert second.messages[0]["content"].startswith(shared)  # the blocks of hash ids 5 and 6
    assert abs(second.chars - 1536 * 4) <= 3 and first.messages[0]["content"].endswith(f"{TAG[:-1]} req 1]")


def test_think_time_is_the_workloads_and_else_the_agents_own():
    def pauses(workload: WorkloadSettings) -> list[float]:
        user = SimpleNamespace(workload=drawer(workload))
        wait = thinking(between(0.5, 1.5))
        return [wait(user) for _ in range(200)]

    assert all(0.5 <= p <= 1.5 for p in pauses(WorkloadSettings()))
    assert set(pauses(WorkloadSettings(think=fixed(0.0)))) == {0.0}
    spread = pauses(read_workload(SimpleNamespace(think_time="1s..3s")))
    assert 1.0 <= min(spread) < 1.2 and 2.8 < max(spread) <= 3.0


def test_an_agent_draws_from_its_worker_index_and_number():
    environment = Environment(user_classes=[ChatAgent])
    environment.runner = SimpleNamespace(worker_index=3)  # what Locust's WorkerRunner carries
    agent = agent_workload(environment, SIZED, 64, 12, TAG)
    assert texts(agent, 3) == texts(drawer(SIZED, "w3/a12"), 3)
