"""A real agent's session, recorded once through the recorder, replayed by N agents against a fresh
simulator: every replayed step sends the recorded messages and tools (the copy tag aside), the simulator
counts the calls the kit's rows count, the think times recorded are kept, and sizes read back as recorded."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pytest

from contract.exit_codes import OK
from simgateway import launch
from simgateway.calls import RESULT_CHARS
from simgateway.client import request
from tests.capture.test_capture_recorder import SIM, TOOL_STEPS, recording, run_agent
from tests.locust_runs import run_locust

pytestmark = pytest.mark.e2e
THINK_MS = 300.0  # written into the recording: what each replayed step must wait after the last answer


def tool_results(messages: list[dict]) -> list[str]:
    """The tool results a history ends with: those after its last assistant message."""
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    return [m["content"] for m in messages[last + 1 :] if m["role"] == "tool"]


def recorded_session(tmp_path: Path) -> Path:
    """One task of the openai-SDK agent, recorded; its steps' think times set to THINK_MS."""
    out = tmp_path / "recorded.jsonl"
    with launch.running(SIM) as gw, recording(gw.url, out) as (base, _):
        run_agent(base, 1)
    header, *calls = [json.loads(line) for line in out.read_text().splitlines()]
    for call in calls[1:]:
        call["think_ms"] = THINK_MS
    out.write_text("".join(json.dumps(v) + "\n" for v in [header, *calls]))
    return out


def smoke(users: int, duration: str) -> tuple[str, ...]:
    """`users` agents replaying the file, each from its own place and on round it, for `duration`."""
    return ("--load-profile", "smoke", "--peak-users", str(users), "--duration", duration)


def copies(n: int) -> tuple[str, ...]:
    """`n` agents at once, each replaying one session once: exactly `n` copies (one round of the rounds
    profile, no baseline)."""
    return ("--load-profile", "rounds", "--rounds", str(n), "--baseline", "0s")


def replay(tmp_path: Path, name: str, sessions: Path, profile: tuple[str, ...], *extra: str):
    """The session file replayed under `profile` against a fresh simulator: (run dir, its call log)."""
    run_dir = tmp_path / name
    with launch.running(SIM) as gw:
        done = run_locust(run_dir, "--host", gw.url, "--sessions", str(sessions), *profile, *extra)
        truth = request(gw.url, "GET", "/v1/sim/calls").json()
    assert done.returncode == OK, done.stderr[-3000:]
    return run_dir, truth


def test_a_recorded_session_replayed_x20_is_sent_step_for_step_with_its_think_times(tmp_path):
    recorded = recorded_session(tmp_path)
    steps = [json.loads(line) for line in recorded.read_text().splitlines()[1:]]
    run_dir, truth = replay(tmp_path, "tagged", recorded, copies(20))
    requests = pd.read_csv(run_dir / "requests.csv")
    tasks = pd.read_csv(run_dir / "tasks.csv")
    done = tasks[tasks["status"] == "done"]
    assert len(done) == len(tasks) == 20 and (done["steps"] == TOOL_STEPS + 1).all(), tasks["status"]
    assert truth["totals"]["calls"] == len(requests) == 20 * len(steps)  # 20 x the recording, each a row
    assert len(truth["conversations"]) == len(tasks)  # each copy tagged: a conversation of its own
    mine = requests[requests["task_id"].isin(done["task_id"])].sort_values(["task_id", "step"])
    gaps: list[float] = []
    for _, rows in mine.groupby("task_id"):
        assert list(rows["step"]) == list(range(1, TOOL_STEPS + 2))
        recorded_in = [s["response"]["usage"]["prompt_tokens"] for s in steps]
        assert list(rows["asked_tokens_in"]) == recorded_in  # the recording's own count, as the size asked
        extra = rows["tokens_in"] - rows["asked_tokens_in"]  # the copy tag's ~42 characters on every step
        assert 0 < extra.min() and extra.max() <= 12 and extra.max() - extra.min() <= 1, list(extra)
        ended = rows["ts"] + rows["latency_ms"] / 1000.0
        gaps += list((rows["ts"].iloc[1:].to_numpy() - ended.iloc[:-1].to_numpy()) * 1000.0)
    assert min(gaps) >= THINK_MS - 5, "a replayed step never starts before its recorded think time"
    assert statistics.median(gaps) <= THINK_MS + 20, sorted(gaps)  # late only by the host's own delay
    ids = set(mine["request_id"])
    logged = [c for c in truth["calls"] if c["id"] in ids]
    assert len(logged) == 20 * len(steps) and all(c["tools_offered"] == ["lookup"] for c in logged)
    # each copy's steps at the simulator: the recorded messages, its tag first in the first user message
    first = next(m["content"] for m in steps[0]["request"]["messages"] if m["role"] == "user")
    results = [[r[:RESULT_CHARS] for r in tool_results(s["request"]["messages"])] for s in steps]
    for task_id, rows in mine.groupby("task_id"):
        seen = [c for c in logged if c["id"] in set(rows["request_id"])]
        assert {c["first_user"] for c in seen} == {f"[copy {task_id}] {first}"}
        assert [c["tool_results"] for c in seen] == results


def test_identical_copies_send_the_recording_byte_for_byte_and_read_back_its_sizes(tmp_path):
    recorded = recorded_session(tmp_path)
    run_dir, truth = replay(tmp_path, "identical", recorded, smoke(2, "3s"), "--identical-copies")
    requests = pd.read_csv(run_dir / "requests.csv")
    answered = requests[requests["ok"] == 1]
    assert len(answered) >= 2 * (TOOL_STEPS + 1)
    assert (answered["tokens_in"] == answered["asked_tokens_in"]).all()  # 0 % off the recorded usage
    assert len(truth["conversations"]) == 1  # every copy is the recorded conversation


def test_replay_agent_without_a_session_file_and_a_bad_file_are_refused_in_one_line(tmp_path):
    done = run_locust(tmp_path / "a", "ReplayAgent", "--load-profile", "smoke")
    assert done.returncode == 2 and "add --sessions FILE" in done.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"format": "loadkit-sessions/1"}\n{"session": "s", "offset_s": 0, "step": 0, "api": "chat"\n'
    )
    done = run_locust(tmp_path / "b", "--sessions", str(bad), "--load-profile", "smoke")
    assert done.returncode == 2 and f"{bad}:2: not JSON" in done.stderr
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
