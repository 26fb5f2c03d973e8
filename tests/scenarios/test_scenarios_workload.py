"""The workload's pure parts: distributions and their quantiles, the seeded text pool, the workload file
(sections, keys, the options over it), datasets and traces, each bad file named by file, line and field."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from scenarios.errors import ProfileConfigError, WorkloadError
from scenarios.open_model import pacer_from_doc
from scenarios.options import ProfileOptions
from scenarios.registry import build_profile
from scenarios.workloads.datasets import load_dataset
from scenarios.workloads.distributions import Distribution, between
from scenarios.workloads.settings import read_workload
from scenarios.workloads.synthetic_text import CHARS_PER_WORD, VOCABULARY, TextPool
from scenarios.workloads.traces import load_trace
from scenarios.workloads.workload_file import EXTENSIONS
from tests.paths import REPO


def options(**given) -> SimpleNamespace:
    return SimpleNamespace(**given)


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


# --- distributions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dist",
    [
        Distribution("lognormal", 2000, 500),
        Distribution("normal", 2000, 300),
        Distribution("uniform", 2000, 400),
        between(1.0, 3.0),
    ],
    ids=["lognormal", "normal", "uniform", "between"],
)
def test_draws_follow_the_distribution_quantiles_within_2_percent(dist):
    rng = random.Random(7)
    draws = sorted(dist.draw(rng) for _ in range(40_000))
    for q in (0.05, 0.5, 0.95):
        assert draws[int(q * len(draws))] == pytest.approx(dist.quantile(q), rel=0.02), q
    assert sum(draws) / len(draws) == pytest.approx(dist.mean, rel=0.01)


def test_lognormal_is_parametrised_by_the_mean_and_stdev_of_its_values():
    dist = Distribution("lognormal", 2000, 500)
    draws = [dist.draw(random.Random(i)) for i in range(20_000)]
    mean = sum(draws) / len(draws)
    stdev = (sum((d - mean) ** 2 for d in draws) / len(draws)) ** 0.5
    assert mean == pytest.approx(2000, rel=0.02) and stdev == pytest.approx(500, rel=0.05)


def test_draws_are_clipped_to_min_and_max():
    dist = Distribution("normal", 100, 200, low=50, high=120)
    draws = [dist.draw(random.Random(i)) for i in range(2000)]
    assert min(draws) == 50 and max(draws) == 120
    assert dist.quantile(0.01) == 50 and dist.quantile(0.99) == 120


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"kind": "gauss", "mean": 5}, "distribution 'gauss': unknown"),
        ({"kind": "fixed", "mean": -5}, "mean -5: must be a finite number >= 0"),
        ({"kind": "normal", "mean": 5, "stdev": 1, "low": 9, "high": 3}, "min 9 is above max 3"),
        ({"kind": "lognormal", "mean": 5}, "lognormal needs a mean > 0 and a stdev > 0"),
        ({"kind": "uniform", "mean": 5}, "uniform needs a stdev, or both min and max"),
    ],
)
def test_an_impossible_distribution_says_why(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Distribution(**kwargs)


# --- the text pool ----------------------------------------------------------------------------------------


def test_the_vocabulary_averages_four_characters_a_word_with_its_space():
    assert sum(len(w) + 1 for w in VOCABULARY) / len(VOCABULARY) == CHARS_PER_WORD


def test_slices_cut_at_word_boundaries_within_a_word_of_the_size():
    pool, words = TextPool("seed", 1_000_000), set(VOCABULARY)
    rng = random.Random(3)
    for _ in range(200):
        chars = rng.randrange(1, 50_000)
        text = pool.slice(rng.randrange(len(pool)), chars)
        assert abs(len(text) - chars) <= 3, chars
        assert text.startswith(" ") and words.issuperset(text.split())


def test_a_slice_longer_than_the_pool_wraps_around():
    pool = TextPool("seed", 0)
    text = pool.slice(123, 3 * len(pool))
    assert abs(len(text) - 3 * len(pool)) <= 5 and set(VOCABULARY).issuperset(text.split())


@pytest.mark.parametrize("chars", [0, 1, 4000, 200_000, 3 * 262_144])  # the last wraps around the pool
def test_a_piece_is_the_slice_and_its_bytes_a_view_of_the_pool_where_it_does_not_wrap(chars):
    pool = TextPool("seed", 0)
    text, utf8 = pool.piece(777, chars)
    assert text == pool.slice(777, chars) and bytes(utf8) == text.encode("ascii")
    assert isinstance(utf8, memoryview) == (0 < chars <= len(pool) // 2)  # no copy of a prompt's text


def test_the_same_seed_makes_the_same_pool_and_another_seed_another():
    assert TextPool("a", 0).text == TextPool("a", 0).text != TextPool("b", 0).text


def test_the_vocabulary_is_one_token_a_word_in_openais_tokenisers():
    tiktoken = pytest.importorskip("tiktoken")
    from tests.gateways.harness import tiktoken_offline

    with tiktoken_offline():
        for name in ("cl100k_base", "o200k_base"):
            encoding = tiktoken.get_encoding(name)
            assert all(len(encoding.encode(" " + w)) == 1 for w in VOCABULARY), name
            text = TextPool("seed", 0).slice(0, 40_000)
            assert len(encoding.encode(text)) == len(text.split())


# --- the workload file and the options ---------------------------------------------------------------------

GOOD = """seed = 7

[input]
mean = 2000
stdev = 500
distribution = "lognormal"
max = 8000

[output]
mean = 200

[prefix]
tokens = 1000

[think]
distribution = "uniform"
min = "1s"
max = "3s"
"""


def test_a_workload_file_is_read_and_the_options_override_it(tmp_path):
    path = write(tmp_path, "w.toml", GOOD)
    workload = read_workload(options(workload_file=path))
    assert workload.seed == 7 and workload.prefix_tokens == 1000
    assert workload.input == Distribution("lognormal", 2000, 500, None, 8000)
    assert workload.output == Distribution("fixed", 200) and workload.think == between(1.0, 3.0)
    over = read_workload(options(workload_file=path, input_tokens="3000", think_time="0", seed="9"))
    assert over.input == Distribution("lognormal", 3000, 500, None, 8000)  # the mean only: the rest stays
    assert over.think == Distribution("fixed", 0.0) and over.seed == 9  # --think-time replaces [think]


@pytest.mark.parametrize(
    "text, seconds",
    [("0", (0.0, 0.0)), ("2s", (2.0, 2.0)), ("1s..3s", (1.0, 3.0)), ("250ms..1", (0.25, 1.0))],
)
def test_think_time_takes_zero_a_duration_or_a_range(text, seconds):
    think = read_workload(options(think_time=text)).think
    assert think is not None and (think.quantile(0.001), think.quantile(0.999)) == pytest.approx(
        seconds, abs=0.01
    )


def test_no_workload_options_is_the_default_workload():
    workload = read_workload(options())
    assert workload.input is workload.output is workload.think is workload.dataset is workload.trace is None
    assert not workload.sized and workload.seed == 0


@pytest.mark.parametrize(
    "text, message",
    [
        (
            '[input]\nmean = 10\nstdev = 2\ndistribution = "gauss"\n',
            "w.toml:4: [input] distribution 'gauss': unknown",
        ),
        ("[input]\nmean = -10\n", "w.toml:2: [input] mean -10: expected a number of tokens >= 0"),
        ("[output]\nmean = 10\nmin = 20\nmax = 5\n", "w.toml:1: [output]: min 20 is above max 5"),
        ("[inptu]\nmean = 10\n", "w.toml:1: [inptu]: unknown; the file knows seed, [input]"),
        ("[input]\nmeen = 10\n", "w.toml:2: [input] meen: unknown key; [input] takes distribution"),
        ("seeds = 3\n", "w.toml:1: seeds: unknown"),
        ("[input\nmean = 1\n", "w.toml: not valid TOML"),
        ('[think]\nmean = "soon"\n', "w.toml:2: [think] mean: 'soon' is not a duration"),
        ("[prefix]\ntokens = 100\n", "w.toml:2: [prefix] tokens: needs an input size"),
        (
            "[input]\nmean = 100\n[prefix]\ntokens = 200\n",
            "w.toml:4: [prefix] tokens 200: the prefix is part",
        ),
        ("[trace]\nspeed = 2\n", "w.toml:2: [trace] speed: needs a trace file"),
        ('[dataset]\nfile = "none.jsonl"\n', "none.jsonl: cannot read dataset"),
    ],
)
def test_a_bad_workload_file_names_the_file_the_line_and_the_key(tmp_path, text, message):
    path = write(tmp_path, "w.toml", text)
    with pytest.raises(WorkloadError) as caught:
        read_workload(options(workload_file=path))
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(
    "given, message",
    [
        ({"input_tokens": "abc"}, "--input-tokens 'abc': expected a number of tokens >= 0"),
        ({"input_tokens": "-3"}, "--input-tokens '-3'"),
        ({"input_tokens": "100", "input_tokens_distribution": "lognormal"}, "lognormal needs a mean > 0"),
        ({"think_time": "1s..soon"}, "--think-time: 'soon' is not a duration"),
        ({"prefix_tokens": "10"}, "--prefix-tokens: needs an input size (--input-tokens)"),
        ({"seed": "-1"}, "--seed '-1': expected a whole number >= 0"),
        ({"trace_speed": "2"}, "--trace-speed: needs a trace file"),
    ],
)
def test_a_bad_workload_option_names_the_flag(given, message):
    with pytest.raises(WorkloadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_workload(options(**given))


def test_a_section_another_room_registers_is_parsed_by_it_and_kept(tmp_path, monkeypatch):
    path = write(tmp_path, "w.toml", "[memo]\ncount = 3\n")
    with pytest.raises(WorkloadError, match=r"w.toml:1: \[memo\]: unknown"):
        read_workload(options(workload_file=path))
    monkeypatch.setitem(EXTENSIONS, "memo", lambda table, where, folder: (table["count"], where, folder))
    workload = read_workload(options(workload_file=path))
    assert workload.sections["memo"] == (3, f"{path}:1: [memo]", tmp_path)


# --- datasets and traces ---------------------------------------------------------------------------------


def test_a_dataset_reads_messages_lists_bare_lists_and_sharegpt(tmp_path):
    path = write(
        tmp_path,
        "d.jsonl",
        '{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}\n'
        '[{"role": "user", "content": [{"type": "text", "text": "parts"}]}]\n'
        "\n"
        '{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"},'
        ' {"from": "human", "value": "c"}, {"from": "gpt", "value": "d"}]}\n',
    )
    dataset = load_dataset(path, "sequential")
    assert [len(c) for c in dataset.conversations] == [2, 1, 3]  # ShareGPT sent up to its last human turn
    assert dataset.conversations[2][-1] == {"role": "user", "content": "c"}


@pytest.mark.parametrize(
    "line, message",
    [
        ("{oops", "d.jsonl:2: not JSON"),
        ('{"messages": [{"role": "robot", "content": "x"}]}', "d.jsonl:2: messages[0].role 'robot'"),
        ('{"messages": [{"role": "user", "content": 5}]}', "d.jsonl:2: messages[0].content: expected text"),
        ('{"messages": []}', "d.jsonl:2: messages: expected a non-empty list"),
        ('{"conversations": [{"from": "gpt", "value": "x"}]}', "d.jsonl:2: conversations: no human turn"),
        ('{"prompt": "x"}', "d.jsonl:2: expected an object with 'messages' or 'conversations'"),
    ],
)
def test_a_bad_dataset_line_is_named(tmp_path, line, message):
    path = write(tmp_path, "d.jsonl", '{"messages": [{"role": "user", "content": "ok"}]}\n' + line + "\n")
    with pytest.raises(WorkloadError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_dataset(path)


TRACE = (
    '{"timestamp": 0, "input_length": 100, "output_length": 10, "hash_ids": [1, 2]}\n'
    '{"timestamp": 250, "input_length": 200, "session_id": "s1"}\n'
    '{"delay": 250, "text_input": "hello", "output_length": 5}\n'
    '{"timestamp": 1000, "messages": [{"role": "user", "content": "m"}], "extra": {"x": 1}}\n'
)


def test_a_trace_reads_timestamps_delays_sizes_sessions_and_content(tmp_path):
    trace = load_trace(write(tmp_path, "t.jsonl", TRACE), speed=2.0)
    assert [e.offset_s for e in trace.entries] == [0.0, 0.25, 0.5, 1.0]
    assert trace.offsets_s() == (0.0, 0.125, 0.25, 0.5)
    first, second, third, fourth = trace.entries
    assert (first.input_tokens, first.output_tokens, first.hash_ids) == (100, 10, (1, 2))
    assert (second.session_id, second.output_tokens) == ("s1", None)
    assert third.messages == ({"role": "user", "content": "hello"},) and third.input_tokens is None
    assert fourth.messages == ({"role": "user", "content": "m"},)


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"timestamp": 100, "input_length": 5}', "t.jsonl:3: timestamp 100: before the line above's 250 ms"),
        ('{"timestamp": 900, "input_length": -5}', "t.jsonl:3: input_length -5: must be >= 0"),
        ('{"timestamp": 900, "input_length": 2.5}', "t.jsonl:3: input_length 2.5: expected a whole number"),
        ('{"timestamp": 900}', "t.jsonl:3: input_length: missing"),
        ('{"input_length": 5}', "t.jsonl:3: timestamp: missing"),
        ('{"timestamp": -1, "input_length": 5}', "t.jsonl:3: timestamp -1: must be >= 0"),
        ('{"timestamp": 900, "input_length": 5, "hash_ids": "abc"}', "t.jsonl:3: hash_ids: expected a list"),
        ("[1, 2]", "t.jsonl:3: expected a JSON object"),
    ],
)
def test_a_bad_trace_line_is_named(tmp_path, line, message):
    good = '{"timestamp": 0, "input_length": 5}\n{"timestamp": 250, "input_length": 5}\n'
    path = write(tmp_path, "t.jsonl", good + line + "\n")
    with pytest.raises(WorkloadError, match=message):
        load_trace(path)


def test_a_trace_and_an_input_size_cannot_both_give_the_prompts(tmp_path):
    path = write(tmp_path, "t.jsonl", TRACE)
    with pytest.raises(WorkloadError, match="--input-tokens: the trace gives the prompts"):
        read_workload(options(trace=path, input_tokens="100"))


# --- the trace's timing: its offsets through the open model's pacer -----------------------------------------


def test_a_trace_is_paced_at_its_offsets_sped_up_each_arrival_naming_its_line():
    profile = build_profile("trace", ProfileOptions(trace_offsets_s=(0.0, 1.0, 2.0, 10.0), trace_speed=2.0))
    pacer = profile.paced_by(100.0)
    claimed = [pacer.claim(100.0) for _ in range(3)]
    assert [(a.index, a.due_ts) for a in claimed if a] == [(0, 100.0), (1, 100.5), (2, 101.0)]
    assert pacer.claim(107.0) is None and pacer.dropped == 1  # line 3, due at 105, overdue > 1 s


def test_distributed_workers_split_the_trace_every_nth_line():
    profile = build_profile("trace", ProfileOptions(trace_offsets_s=(0.0, 1.0, 2.0, 3.0, 4.0)))
    lines = {}
    for share in (0, 1):
        pacer = pacer_from_doc(profile.share_doc(share, 2, start_ts=0.0))
        lines[share] = [a.index if (a := pacer.claim(0.0)) else None for _ in range(3)]
    assert lines == {0: [0, 2, 4], 1: [1, 3, None]}


def test_the_trace_profile_holds_its_pool_until_the_last_arrival_is_due():
    profile = build_profile("trace", ProfileOptions(trace_offsets_s=(0.0, 0.1, 0.2, 30.0), trace_speed=10.0))
    assert profile.params.max_agents == 15  # 3 arrivals in the busiest second, 5 s each
    assert profile.tick(0.0).users == 15 and profile.tick(3.9) is not None and profile.tick(4.1) is None
    assert profile.rate_points() == [[0.0, 3.0], [1.0, 3.0], [1.0, 0.0], [3.0, 0.0], [3.0, 1.0], [4.0, 1.0]]
    with pytest.raises(ProfileConfigError, match="needs --trace FILE"):
        build_profile("trace", ProfileOptions())


def test_a_trace_rate_curve_grows_with_its_lines_not_its_span():
    """Two lines 30 days apart (the span ceiling): four corners, not one pair per second (2.6 M)."""
    profile = build_profile("trace", ProfileOptions(trace_offsets_s=(0.0, 2_592_000.0)))
    assert profile.rate_points() == [[0.0, 1.0], [1.0, 1.0], [1.0, 0.0], [2_592_000.0, 0.0]] + [
        [2_592_000.0, 1.0],
        [2_592_001.0, 1.0],
    ]


@pytest.mark.parametrize("path", sorted(str(p) for p in (REPO / "examples" / "workloads").glob("*.toml")))
def test_every_example_workload_reads(path):
    workload = read_workload(options(workload_file=path))
    assert workload.sized or workload.dataset is not None
