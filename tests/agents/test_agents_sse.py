"""SSE parsing and stream timing: the first *content* chunk is the first token; TPOT is the pace of the
content tokens received."""

import itertools

from agents.loop.tool_deltas import ToolCallAssembler, chat_token_kind
from agents.wire.sse import StreamTiming, iter_sse
from contract.derived import TPOT_MS, derived_value
from contract.records import RequestRecord


def test_events_split_on_blank_lines_and_join_data_lines():
    lines = ["event: delta", "data: a", "data: b", "", ": comment", "data: [DONE]", ""]
    events = list(iter_sse(lines, clock=itertools.count().__next__))
    assert [(e.event, e.data) for e in events] == [("delta", "a\nb"), (None, "[DONE]")]


def test_trailing_event_without_blank_line_is_kept():
    assert [e.data for e in iter_sse(["data: x"])] == ["x"]


def test_role_only_first_chunk_is_not_a_token():
    role_only = {"choices": [{"delta": {"role": "assistant", "content": ""}}]}
    content = {"choices": [{"delta": {"content": "Hi"}}]}
    usage_only = {"choices": [], "usage": {"prompt_tokens": 3}}
    kinds = [chat_token_kind(c, ToolCallAssembler()) for c in (role_only, content, usage_only)]
    assert kinds == [None, "content", None]


def test_ttft_and_inter_token_latency_from_arrival_times():
    timing = StreamTiming(sent=10.0, token_times=[])
    for at in (10.3, 10.32, 10.36):
        timing.mark_token(at)
    assert round(timing.ttft_ms, 6) == 300.0
    assert round(timing.itl_ms_mean, 6) == 30.0
    assert round(timing.itl_ms_max, 6) == 40.0


def test_a_stream_without_tokens_has_no_ttft():
    timing = StreamTiming(sent=1.0, token_times=[])
    assert timing.ttft_ms is None and timing.itl_ms_mean is None


def test_tpot_is_the_span_of_the_content_received_over_its_tokens_less_one():
    timing = StreamTiming(sent=10.0, token_times=[])
    for at in (10.2, 10.21, 10.22):  # a tool call's fragments: TTFT and ITL, not TPOT
        timing.mark_token(at, content=False)
    for at in (10.5, 10.52, 10.54, 10.56):
        timing.mark_token(at)
    record = RequestRecord(ts=0.0, agent_id="a", operation="chat.stream", tokens_out=90)  # usage: 90
    timing.fill(record)
    assert (record.chunks, record.content_tokens) == (7, 4) and round(record.ttft_ms, 6) == 200.0
    row = {"content_tokens": record.content_tokens, "content_span_ms": record.content_span_ms}
    assert round(derived_value(TPOT_MS, row), 6) == 20.0  # 60 ms over 3 gaps, whatever usage says


def test_tpot_is_withheld_where_at_most_one_content_token_arrived():
    for marks in ((), ((1.2, True),), ((1.2, False), (1.3, False))):
        timing = StreamTiming(sent=1.0, token_times=[])
        for at, content in marks:
            timing.mark_token(at, content)
        record = RequestRecord(ts=0.0, agent_id="a", operation="x")
        timing.fill(record)
        row = {"content_tokens": record.content_tokens, "content_span_ms": record.content_span_ms}
        assert derived_value(TPOT_MS, row) is None, marks
