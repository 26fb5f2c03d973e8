"""OpenTelemetry GenAI spans, made by the real SDK and exported as OTLP JSON, imported as a session file:
it loads as a recording does, keeps every chat call's messages, tools, usage and think time, never an
auth attribute, and replays against the simulator step for step. Bad exports are one line, no file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis.load import load_run
from analysis.sessions import sessions_section
from capture.otel_import import read_export
from contract.exit_codes import BAD_INPUT, OK
from kit.capture import main
from scenarios.workloads.session_file import load_sessions
from tests.capture.otel_spans import SECRET, Step, call, export, reply, text
from tests.capture.test_capture_replay import replay, smoke
from tests.paths import REPO

SYSTEM = text("system", "You plan trips.")


def trip(city: str, at_ms: float) -> list[Step]:
    """Two calls: a tool call asked for, then the answer once its result is back (200 ms think time)."""
    asked = [SYSTEM, text("user", f"Plan a trip to {city}")]
    first = Step(at_ms, 50, asked, [call(f"c-{city}", city)], usage_in=41)
    second = Step(
        at_ms + 250,
        60,
        [*asked, call(f"c-{city}", city), reply(f"c-{city}", "cold")],
        [text("assistant", "Pack a coat")],
        usage_in=77,
    )
    return [first, second]


def three_sessions(path: Path) -> Path:
    """trip-A and trip-B by conversation id; a one-call trace without one, named by its trace."""
    hello = Step(
        100, 30, [text("user", "Hello there")], [text("assistant", "Hi")], usage_in=9, usage_out=None
    )
    return export({"trip-A": trip("Oslo", 0), "trip-B": trip("Bergen", 20), None: [hello]}, path)


def imported(tmp_path: Path) -> tuple[Path, subprocess.CompletedProcess]:
    """The export imported by the command a user types."""
    spans, out = three_sessions(tmp_path / "spans.json"), tmp_path / "imported.jsonl"
    argv = [sys.executable, "-m", "kit.capture", "import-otel", str(spans), "--out", str(out)]
    return out, subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)


def test_sdk_spans_import_as_a_session_file_with_every_call_and_no_secret(tmp_path, capsys):
    out = tmp_path / "imported.jsonl"
    assert main(["import-otel", str(three_sessions(tmp_path / "spans.json")), "--out", str(out)]) == OK
    assert "5 calls in 3 sessions" in capsys.readouterr().out
    assert SECRET not in out.read_text() and "authorization" not in out.read_text()
    recorded = load_sessions(str(out))
    assert recorded.upstream == "otel://127.0.0.1:4000"
    names = [s.name for s in recorded.sessions]
    assert names[:2] == ["trip-A", "trip-B"] and names[2].startswith("trace-") and len(names[2]) == 38
    oslo = recorded.sessions[0].steps
    assert [len(s.messages) for s in oslo] == [2, 4]
    assert oslo[0].messages[1] == {"role": "user", "content": "Plan a trip to Oslo"}
    asked_tool = oslo[1].messages[2]["tool_calls"][0]
    assert asked_tool["id"] == "c-Oslo" and json.loads(asked_tool["function"]["arguments"]) == {"q": "Oslo"}
    assert oslo[1].messages[3] == {"role": "tool", "tool_call_id": "c-Oslo", "content": "cold"}
    assert oslo[0].body["tools"][0]["function"]["name"] == "lookup" and oslo[0].body["max_tokens"] == 32
    assert [s.prompt_tokens for s in oslo] == [41, 77] and oslo[0].completion_tokens == 6
    assert oslo[0].think_s is None and oslo[1].think_s == pytest.approx(0.2, abs=1e-6)
    assert [s.latency_ms for s in oslo] == [50.0, 60.0]
    lines = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    assert [line["offset_s"] for line in lines] == [0.0, 0.02, 0.1, 0.25, 0.27]  # the export's first span on
    assert lines[0]["response"]["tool_calls"] == [
        {"id": "c-Oslo", "name": "lookup", "arguments": '{"q": "Oslo"}'}
    ]


@pytest.mark.e2e
def test_imported_spans_replay_against_the_simulator_step_for_step(tmp_path):
    out, done = imported(tmp_path)
    assert done.returncode == OK and "5 calls in 3 sessions" in done.stdout, done.stderr
    recorded = load_sessions(str(out))
    run_dir, truth = replay(tmp_path, "replayed", out, smoke(3, "3s"), "--identical-copies")
    requests = pd.read_csv(run_dir / "requests.csv")
    assert truth["totals"]["calls"] == len(requests) >= 5
    seen = {
        (c["first_user"], c["step"], c["prompt_tokens"] > 0, tuple(c["tools_offered"]))
        for c in truth["calls"]
    }
    for session in recorded.sessions:
        first_user = next(m["content"] for m in session.steps[0].messages if m["role"] == "user")
        for number, step in enumerate(session.steps, 1):
            tools = ("lookup",) if "tools" in step.body else ()
            assert (first_user, number, True, tools) in seen, (session.name, number, seen)
    by_session = requests.dropna(subset=["step"]).groupby("task_id")["step"].max()
    assert set(by_session) <= {1, 2} and 2 in set(by_session)
    section = sessions_section(load_run(run_dir))  # the hello span has no output tokens: said, not made up
    assert section is not None
    hello = (requests["recorded_tokens_out"].isna()).sum()
    assert (
        hello
        and f"{hello} of {len(requests)} replayed calls have no recorded completion tokens"
        in " ".join(section.notes)
    )
    per_session = dict(section.tables)["per recorded session, beside the recording"]
    assert set(per_session.index) == {s.name for s in recorded.sessions}


def _no_input(path: Path) -> Path:
    return export({"x": [Step(0, 10, [], [])]}, path)


def _backwards(path: Path) -> Path:
    return export({"x": [Step(0, -5, [text("user", "hi")], [])]}, path)


def _timeless(path: Path) -> Path:
    value = json.loads(three_sessions(path).read_text())
    chat = next(
        s for s in value["resourceSpans"][0]["scopeSpans"][0]["spans"] if s["name"].startswith("chat")
    )
    del chat["startTimeUnixNano"]
    path.write_text(json.dumps(value))
    return path


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p: p.write_text('{"resourceSpans": [') and p, "spans.json:1: not JSON"),
        (lambda p: p.write_text('{"hello": 1}') and p, "not an OTLP JSON trace export"),
        (lambda p: p.write_bytes(b"\xff\xfe\x00") and p, "not UTF-8"),
        (_no_input, "spans[0] ('chat sim-model' "),
        (_backwards, "ends before it starts"),
        (_timeless, "expected both times"),
    ],
)
def test_a_bad_export_is_one_line_naming_it_and_writes_nothing(tmp_path, capsys, make, says):
    spans = make(tmp_path / "spans.json")
    assert main(["import-otel", str(spans), "--out", str(tmp_path / "out.jsonl")]) == BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and str(tmp_path / "spans.json") in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spans.json"]  # no file, no partial one


def test_an_existing_out_is_never_overwritten(tmp_path, capsys):
    spans, out = three_sessions(tmp_path / "spans.json"), tmp_path / "out.jsonl"
    out.write_text("mine\n")
    assert main(["import-otel", str(spans), "--out", str(out)]) == BAD_INPUT
    assert "exists" in capsys.readouterr().err and out.read_text() == "mine\n"


def test_the_older_forms_prompt_and_completion_events_and_message_events_are_read(tmp_path):
    prompt = [{"role": "user", "content": "old form"}]
    completion = [{"role": "assistant", "content": "ok"}]
    v126 = [
        ("gen_ai.content.prompt", {"gen_ai.prompt": json.dumps(prompt)}),
        ("gen_ai.content.completion", {"gen_ai.completion": json.dumps(completion)}),
    ]
    events = [
        ("gen_ai.system.message", {"content": "be brief"}),
        ("gen_ai.user.message", {"content": "events form"}),
        ("gen_ai.choice", {"message": json.dumps({"role": "assistant", "content": "sure"})}),
    ]
    path = export(
        {"old": [Step(0, 10, [], [], events=v126)], "events": [Step(5, 10, [], [], events=events)]},
        tmp_path / "s.json",
    )
    old, by_events = read_export(path)
    assert old.request["messages"] == prompt and old.answer["content"] == "ok"
    assert by_events.request["messages"] == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "events form"},
    ]
    assert by_events.answer["content"] == "sure"


def test_spans_without_a_parent_are_grouped_by_their_first_user_message_with_think_times(tmp_path, capsys):
    """The OpenAI instrumentation as installed: each call a root span, no conversation id; a streamed
    span's finish reason on its gen_ai.choice event only."""
    oslo, bergen = trip("Oslo", 0), trip("Bergen", 20)
    asked = json.dumps(
        [{"id": "c-Oslo", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]
    )
    choice = {"finish_reason": "stop", "message": json.dumps({"role": "assistant", "content": "Pack a coat"})}
    oslo[1].messages, oslo[1].output = [], []  # its messages on events, as that instrumentation writes them
    oslo[1].events = [
        ("gen_ai.system.message", {"content": "You plan trips."}),
        ("gen_ai.user.message", {"content": "Plan a trip to Oslo"}),
        ("gen_ai.assistant.message", {"tool_calls": asked}),
        ("gen_ai.tool.message", {"content": "cold", "id": "c-Oslo"}),
        ("gen_ai.choice", choice),
    ]
    spans = export({None: [*oslo, *bergen]}, tmp_path / "spans.json", parents=False)
    out = tmp_path / "imported.jsonl"
    assert main(["import-otel", str(spans), "--out", str(out)]) == OK
    said = capsys.readouterr().out
    assert "4 calls in 2 sessions" in said and "sessions: 2 by first user message" in said, said
    recorded = load_sessions(str(out))
    assert sorted(len(s.steps) for s in recorded.sessions) == [2, 2]
    for session in recorded.sessions:  # the think time from the gaps: 250 ms later, after 50 ms
        assert session.steps[1].think_s == pytest.approx(0.2, abs=0.001)
    lines = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    streamed = next(
        line for line in lines if line["response"]["content"] == "Pack a coat" and line["step"] == 1
    )
    assert streamed["response"]["finish_reason"] == "stop"  # from its gen_ai.choice event
    assert [m["role"] for m in streamed["request"]["messages"]] == ["system", "user", "assistant", "tool"]
    assert all(line["request"]["tools"][0]["function"]["name"] == "lookup" for line in lines)  # where kept
