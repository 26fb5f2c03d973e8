"""The ceilings (scenarios/ceilings.py): every size and count a workload asks for is refused above its
ceiling with one line naming the value, the ceiling and why, and accepted at a legitimate size (a 1 M-token
prompt); the drawn sizes and the pools stay within the ceiling whatever the distribution's tail."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from agents.calibration import Calibration
from agents.workload import AgentWorkload
from scenarios import ceilings
from scenarios.errors import WorkloadError
from scenarios.workloads.settings import read_workload

CEILING = f"{ceilings.MAX_CONTEXT_TOKENS:,}"


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "given, message",
    [
        ({"input_tokens": "1000000000"}, f"--input-tokens 1,000,000,000: above the ceiling of {CEILING}"),
        ({"input_tokens": "0"}, "--input-tokens 0: a prompt is at least 1 token"),
        ({"input_tokens": "5", "input_tokens_max": "20000000"}, "--input-tokens-max 20,000,000: above"),
        ({"input_tokens": "5", "input_tokens_min": "20000000"}, "--input-tokens-min 20,000,000: above"),
        ({"output_tokens": "1000000000000"}, "--output-tokens 1,000,000,000,000: above the ceiling"),
    ],
)
def test_an_option_above_its_ceiling_is_refused_naming_value_and_ceiling(given, message):
    with pytest.raises(WorkloadError) as caught:
        read_workload(SimpleNamespace(**given))
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[input]\nmean = 1000000000\n", "w.toml:2: [input] mean 1,000,000,000: above the ceiling of"),
        ("[input]\nmean = 0\n", "w.toml:2: [input] mean 0: a prompt is at least 1 token"),
        ("[input]\nmean = 0\n[prefix]\ntokens = 0\n", "w.toml:2: [input] mean 0: a prompt is at least"),
        ("[tools]\ncount = 1000000\n", "w.toml:1: [tools] count 1,000,000: above the ceiling of 1,024"),
        ("[tools]\ncount = 1000\nschema_tokens = 100000\n", "count × schema_tokens 100,000,000: above"),
        ("[tools]\nresult = 1e9\n", "w.toml:1: [tools] result 1,000,000,000: above the ceiling"),
        ("[tools]\n[loop]\nmax_steps = 1000000000\n", "[loop] max_steps 1,000,000,000: above the ceiling"),
    ],
)
def test_a_workload_file_value_above_its_ceiling_names_file_line_and_key(tmp_path, text, message):
    with pytest.raises(WorkloadError) as caught:
        read_workload(SimpleNamespace(workload_file=write(tmp_path, "w.toml", text)))
    assert message in str(caught.value) and str(caught.value).startswith(str(tmp_path))


@pytest.mark.parametrize(
    "lines, message",
    [
        ('{"timestamp": 0, "input_length": 1000000000}', "t.jsonl:1: input_length 1,000,000,000: above"),
        ('{"timestamp": 0, "input_length": 5, "output_length": 1e12}', "t.jsonl:1: output_length"),
        ('{"timestamp": 0, "input_length": 5}\n{"timestamp": 1e15, "input_length": 5}', "t.jsonl:2: the"),
        ('{"timestamp": 0, "input_length": 5, "hash_ids": ' + str(list(range(30000))) + "}", "hash_ids"),
    ],
)
def test_a_trace_line_above_its_ceiling_is_refused_at_its_line(tmp_path, lines, message):
    with pytest.raises(WorkloadError, match="ceiling") as caught:
        read_workload(SimpleNamespace(trace=write(tmp_path, "t.jsonl", lines + "\n")))
    assert message in str(caught.value)


def test_a_span_is_judged_after_the_speed_up(tmp_path):
    """40 days of trace replayed 2x fast is 20 days: within the 30-day ceiling."""
    path = write(
        tmp_path, "t.jsonl", '{"timestamp": 0, "input_length": 5}\n{"timestamp": 3456e6, "input_length": 5}\n'
    )
    assert read_workload(SimpleNamespace(trace=path, trace_speed="2")).trace is not None
    with pytest.raises(WorkloadError, match="30 days"):
        read_workload(SimpleNamespace(trace=path))


def test_a_one_million_token_context_is_legitimate_and_its_draws_stay_within_the_ceiling():
    workload = read_workload(SimpleNamespace(input_tokens="1000000", output_tokens="1000000"))
    assert workload.largest_prompt_tokens() == 1_000_000
    heavy = read_workload(SimpleNamespace(input_tokens="5000000", input_tokens_stdev="50000000"))
    assert heavy.largest_prompt_tokens() == ceilings.MAX_CONTEXT_TOKENS  # a lognormal's tail, clipped
    agent = AgentWorkload(heavy, 64, "a", "[t]", Calibration())
    agent.prompts = random.Random(1)
    sizes = [agent.next_request("x").asked_in for _ in range(50)]
    assert max(s for s in sizes if s) <= ceilings.MAX_CONTEXT_TOKENS


def test_the_memory_ceiling_counts_the_pool_and_each_agents_prompt():
    one_gib = 1024**3
    ceilings.check_memory(1_000_000, 10, 16 * one_gib, "--input-tokens")  # 88 MB of 8 GiB
    with pytest.raises(WorkloadError, match=r"1,000 agents: their prompt text takes about 7.46 GiB"):
        ceilings.check_memory(1_000_000, 1000, 8 * one_gib, "--input-tokens")
