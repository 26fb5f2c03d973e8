"""LiteLLM's logged calls (StandardLoggingPayload lines, SpendLogs rows) imported as a session file, on
records shaped as LiteLLM 1.106.12 writes them (their fields as tests/gateways/test_gateways_litellm_import.py
reads them from a real proxy): the session rules, the fields never copied, and bad input in one line with
no file. The real proxy's own records are tested there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from capture.litellm_import import read_logs
from contract.exit_codes import BAD_INPUT, OK
from kit.capture import main
from scenarios.workloads.session_file import load_sessions

SECRET = "sk-litellm-secret-0123456789"
T0 = 1_764_633_600.0


def logged(n: int, user_text: str, start: float, took: float = 0.05, **fields) -> dict:
    """A StandardLoggingPayload of one chat call, with the secret-carrying fields LiteLLM adds."""
    return {
        "id": f"chatcmpl-{n}",
        "trace_id": f"uuid-{n}",  # a per-call uuid unless the caller named a session
        "session_id": "",
        "call_type": "acompletion",
        "status": "success",
        "stream": False,
        "startTime": T0 + start,
        "endTime": T0 + start + took,
        "completionStartTime": T0 + start + took,
        "model": "openai/sim-model",
        "model_group": "sim-model",
        "api_base": "http://user:pw@127.0.0.1:9000/v1",
        "end_user": None,
        "messages": [{"role": "user", "content": user_text}],
        "model_parameters": {"max_tokens": 32, "extra_headers": {"Authorization": SECRET}},
        "response": {
            "id": f"chatcmpl-{n}",
            "choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
        },
        "prompt_tokens": 10 + n,
        "completion_tokens": 3,
        "metadata": {"user_api_key_hash": SECRET, "user_api_key_end_user_id": None},
        "hidden_params": {"additional_headers": {"x-api-key": SECRET}},
        **fields,
    }


def spend_row(n: int, user_text: str, start: str, end: str, **fields) -> dict:
    """A SpendLogs row as GET /spend/logs returns it, stored with store_prompts_in_spend_logs."""
    body = {"model": "sim-model", "messages": [{"role": "user", "content": user_text}], "api_key": SECRET}
    return {
        "request_id": f"chatcmpl-{n}",
        "call_type": "acompletion",
        "api_key": SECRET,
        "startTime": start,
        "endTime": end,
        "completionStartTime": end,
        "model": "openai/sim-model",
        "session_id": f"uuid-{n}",
        "end_user": "",
        "messages": "{}",
        "proxy_server_request": json.dumps(body),
        "response": json.dumps({"choices": [{"message": {"content": "hi"}}]}),
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "metadata": json.dumps({"user_api_key": SECRET}),
        "status": "success",
        **fields,
    }


def lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_sessions_by_session_id_shared_trace_end_user_else_conversation_and_no_secret(tmp_path, capsys):
    records = [
        logged(1, "Plan Oslo", 0.0, trace_id="trip-A"),  # litellm_session_id sets the trace id
        logged(2, "Plan Oslo", 0.3, trace_id="trip-A", stream=True, completionStartTime=T0 + 0.31),
        logged(3, "Hi", 0.1, end_user="bob"),
        logged(4, "Alone", 0.2),  # its own uuid trace: the conversation names it
        logged(5, "Named", 0.4, session_id="s-9"),
        {"id": "emb-1", "trace_id": "x", "call_type": "aembedding", "status": "success"},  # passed over
        logged(6, "Failed", 0.5, status="failure"),  # passed over
    ]
    out = tmp_path / "out.jsonl"
    assert main(["import-litellm", str(lines(tmp_path / "log.jsonl", records)), "--out", str(out)]) == OK
    assert "5 calls in 4 sessions" in capsys.readouterr().out
    assert SECRET not in out.read_text() and "pw@" not in out.read_text()
    recorded = load_sessions(str(out))
    assert recorded.upstream == "litellm://127.0.0.1:9000"
    names = [s.name for s in recorded.sessions]
    assert names[:2] == ["trip-A", "bob"] and names[2].startswith("conversation-") and names[3] == "s-9"
    first, second = recorded.sessions[0].steps
    assert first.body == {
        "model": "sim-model",
        "messages": [{"role": "user", "content": "Plan Oslo"}],
        "max_tokens": 32,
    }
    assert second.think_s == pytest.approx(0.25, abs=1e-6) and second.prompt_tokens == 12
    calls = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    answers = [c["response"] for c in calls if c["session"] == "trip-A"]
    assert answers[0]["ttft_ms"] is None and answers[1]["ttft_ms"] == pytest.approx(10.0, abs=1e-3)
    assert answers[0]["content"] == "ok" and answers[0]["usage"] == {
        "prompt_tokens": 11,
        "completion_tokens": 3,
    }


def test_a_secret_in_tool_call_arguments_text_is_masked_on_import_and_other_arguments_kept(tmp_path):
    secret, plain = json.dumps({"q": "x", "api_key": SECRET}), '{"q":"x"}'
    asked = [
        {"id": f"c{i}", "function": {"name": "f", "arguments": a}} for i, a in enumerate((secret, plain))
    ]
    record = logged(1, "Hi", 0.0)
    record["messages"].append({"role": "assistant", "tool_calls": asked})
    record["response"]["choices"][0]["message"]["tool_calls"] = asked
    out = tmp_path / "out.jsonl"
    assert main(["import-litellm", str(lines(tmp_path / "log.jsonl", [record])), "--out", str(out)]) == OK
    call = json.loads(out.read_text().splitlines()[1])
    assert SECRET not in out.read_text()
    sent = [c["function"]["arguments"] for c in call["request"]["messages"][-1]["tool_calls"]]
    for arguments in (sent, [c["arguments"] for c in call["response"]["tool_calls"]]):
        assert json.loads(arguments[0]) == {"q": "x", "api_key": "***"} and arguments[1] == plain


def test_spend_logs_rows_as_a_json_array_read_their_stored_request_body(tmp_path):
    rows = [
        spend_row(1, "Hello", "2026-12-03T10:00:00.000000+00:00", "2026-12-03T10:00:00.500000+00:00"),
        spend_row(2, "Hello", "2026-12-03T10:00:01", "2026-12-03T10:00:01.250000", end_user="bob"),
    ]
    path = tmp_path / "spend.json"
    path.write_text(json.dumps(rows, indent=1))
    one, two = read_logs(path)
    assert one.session.startswith("conversation-") and two.session == "bob"  # no zone: UTC, as stored
    assert one.request == {"model": "sim-model", "messages": [{"role": "user", "content": "Hello"}]}
    assert two.start_s - one.start_s == pytest.approx(1.0) and two.answer["latency_ms"] == 250.0
    assert one.answer["content"] == "hi" and one.where.endswith("record [0] (chatcmpl-1)")


@pytest.mark.parametrize(
    ("records", "says"),
    [
        ('[{"id": 1,', "log.jsonl:1: not JSON"),
        ('{"id": "a", "trace_id": "t", "call_type": "embedding"}\n{"id":\n', "log.jsonl:2: not JSON"),
        ("[3]", "log.jsonl: record [0]: expected a JSON object"),
        ([{"call_type": "acompletion"}], "log.jsonl:1: neither a StandardLoggingPayload"),
        ([logged(1, "x", 0, startTime=None)], "log.jsonl:1 (chatcmpl-1): startTime None: expected"),
        ([logged(1, "x", 0, took=-1)], "log.jsonl:1 (chatcmpl-1): endTime: ends before it starts"),
        ([logged(1, "x", 0, messages="hi")], "log.jsonl:1 (chatcmpl-1): messages: no chat messages"),
        (
            [spend_row(1, "x", "2026-12-03T10:00:00", "2026-12-03T10:00:01", proxy_server_request="{}")],
            "log.jsonl:1 (chatcmpl-1): proxy_server_request.messages (or messages): no chat messages (a "
            "SpendLogs row keeps them only with store_prompts_in_spend_logs)",
        ),
        ([{"id": "e", "trace_id": "t", "call_type": "aembedding"}], "log.jsonl: no chat call"),
    ],
)
def test_bad_logs_are_one_line_naming_the_file_record_and_field_and_write_nothing(
    tmp_path, capsys, records, says
):
    path = tmp_path / "log.jsonl"
    lines(path, records) if isinstance(records, list) else path.write_text(records)
    assert main(["import-litellm", str(path), "--out", str(tmp_path / "out.jsonl")]) == BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and str(path) in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl"]  # no file, no partial one


def test_not_utf8_and_an_existing_out_are_refused(tmp_path, capsys):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\xff\xfe\x00")
    assert main(["import-litellm", str(path), "--out", str(tmp_path / "out.jsonl")]) == BAD_INPUT
    assert "not UTF-8" in capsys.readouterr().err
    lines(path, [logged(1, "x", 0)])
    out = tmp_path / "out.jsonl"
    out.write_text("mine\n")
    assert main(["import-litellm", str(path), "--out", str(out)]) == BAD_INPUT
    assert "exists" in capsys.readouterr().err and out.read_text() == "mine\n"
