"""Calibration against a gateway's own count: tokens = overhead + chars / ratio fitted per gateway, so
prompts of every size come out at their asked size, the short as the long. Truth: LiteLLM's
`token_counter` (tiktoken plus its tokens per message: the count LiteLLM's proxy reports) on the very
messages the kit would send, and a gateway of known line."""

from __future__ import annotations

import os

import pytest

from agents.calibration import Calibration
from agents.workload import AgentWorkload
from scenarios.workloads.distributions import fixed
from scenarios.workloads.settings import WorkloadSettings

TAG = "[agent 12345-1 run 20261201-235959-abcd]"  # a real tag's length: it tokenises denser than words
SIZES = (64, 128, 2000)


def agents(calibration: Calibration) -> list[AgentWorkload]:
    """One agent per asked size, all on one load generator's calibration (one gateway)."""
    return [
        AgentWorkload(
            WorkloadSettings(input=fixed(s), output=fixed(16), seed=3), 64, f"w0/a{s}", TAG, calibration
        )
        for s in SIZES
    ]


def test_prompts_of_64_128_and_2000_tokens_read_back_within_5_percent_through_litellms_count():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the cost map
    litellm = pytest.importorskip("litellm", reason="litellm not installed (requirements-gateways.txt)")
    calibration = Calibration()
    errors: dict[int, list[float]] = {s: [] for s in SIZES}
    for _ in range(20):
        for agent in agents(calibration):
            draw = agent.next_request("unused")
            counted = litellm.token_counter(model="gpt-4o-mini", messages=list(draw.messages))
            agent.observe(draw, counted)
            errors[draw.asked_in].append((counted - draw.asked_in) / draw.asked_in)
    fit = calibration.fit
    assert 10 <= fit.overhead <= 25 and 3.8 <= fit.chars_per_token <= 4.2, fit  # 7 a message + the tag
    for size, found in errors.items():
        later = found[2:]  # the first rounds learn the line
        assert max(map(abs, later)) <= 0.05, (size, [round(e * 100, 1) for e in later])


def test_a_gateway_of_known_overhead_and_ratio_is_read_back():
    calibration = Calibration()
    for chars in (200, 400, 800, 3000, 8000, 250):
        calibration.observe(chars, 20 + chars / 3.5)
    fit = calibration.fit
    assert fit.overhead == 20 and fit.chars_per_token == pytest.approx(3.5, rel=0.003)
    assert calibration.chars_for(120) == pytest.approx(100 * 3.5, abs=2)
    assert calibration.describe()["overhead_tokens"] == 20


def test_one_size_keeps_one_ratio_and_a_gateways_own_context_is_set_aside():
    calibration = Calibration()
    for _ in range(5):
        calibration.observe(256, 80)  # one size: the overhead cannot be told apart, nor need it be
    assert calibration.fit.overhead == 0 and calibration.fit.chars_for(80) == pytest.approx(256, abs=2)
    calibration.observe(8000, 6000)  # Hermes' system prompt and tools: thousands of tokens of its own
    assert calibration.implausible == 1 and calibration.samples == 5
