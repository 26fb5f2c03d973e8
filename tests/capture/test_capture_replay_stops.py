"""A replay stops when told, and sends each call as recorded, read at the simulator's own call log (its
clock, not the kit's): at -t and at the first SIGTERM no new step starts (in-flight calls finish within
the stop-timeout), the run ends long before the stop-timeout; a recorded non-streamed call replays
non-streamed, a streamed one with its recorded stream_options, and `--sessions-stream always` streams
every call with usage."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from contract import exit_codes
from simgateway import launch
from simgateway.client import request
from tests.fault_runs import KitProcess
from tests.locust_runs import run_locust, wait_for

pytestmark = pytest.mark.e2e
SIM = ["--ttft-ms", "40", "--itl-ms", "5", "--output-tokens", "4"]
STEPS, THINK_MS = 12, 400.0  # a session of ~5.5 s: longer than the runs' -t, so only a stop ends it
STEP_S = 0.2  # one step's latency at most here (40 ms TTFT, 4 tokens), with room for a busy machine
USAGE = {"include_usage": True}


def session_lines(name: str, stream: bool) -> list[dict]:
    """`STEPS` calls of one session: non-streamed (no `stream` key at all, as the OpenAI default), or
    streamed with include_usage on its first call only."""
    lines, messages = [], [{"role": "user", "content": f"{name}: plan a trip"}]
    for step in range(STEPS):
        body: dict = {"model": "m", "messages": list(messages), "max_tokens": 4}
        if stream:
            body |= {"stream": True, **({"stream_options": USAGE} if step == 0 else {})}
        answer = {"status": 200, "latency_ms": 60.0, "ttft_ms": 40.0 if stream else None, "content": "ok"}
        think = None if step == 0 else THINK_MS
        lines.append(
            {"offset_s": step * 0.5, "session": name, "step": step, "think_ms": think, "api": "chat"}
            | {"request": body, "response": answer}
        )
        messages += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": f"go on {step}"}]
    return lines


def session_file(tmp_path: Path) -> Path:
    path = tmp_path / "recorded.jsonl"
    header = {"format": "loadkit-sessions/1", "upstream": "http://127.0.0.1:1", "started_ts": 0.0}
    lines = [header, *session_lines("plain", False), *session_lines("streamed", True)]
    path.write_text("".join(json.dumps(v) + "\n" for v in lines))
    return path


def sim_calls(url: str) -> list[dict]:
    return request(url, "GET", "/v1/sim/calls").json()["calls"]


def test_at_its_duration_no_new_step_starts_and_always_streams_every_call_with_usage(tmp_path):
    recorded = session_file(tmp_path)
    with launch.running(SIM) as gw:
        args = ("--sessions", str(recorded), "-u", "10", "-r", "10", "-t", "3s", "--stop-timeout", "30")
        done = run_locust(tmp_path / "run", "--host", gw.url, *args, "--sessions-stream", "always")
        calls = sim_calls(gw.url)
    assert done.returncode == exit_codes.OK, done.stderr[-3000:]
    starts = [c["ts"] for c in calls]
    assert len(calls) >= 10
    # Locust's -t counts from the first agent's start, at most a moment before the first call
    assert max(starts) - min(starts) <= 3.0 + STEP_S + 0.5, max(starts) - min(starts)
    assert all(c["stream"] and c["stream_options"] == USAGE for c in calls)


def test_a_sigterm_mid_replay_starts_no_request_after_it_and_each_call_is_sent_as_recorded(tmp_path):
    recorded = session_file(tmp_path)
    with launch.running(SIM) as gw:
        args = ("--sessions", str(recorded), "-u", "4", "-r", "4", "-t", "60s", "--stop-timeout", "30")
        kit = KitProcess.start(tmp_path / "run", "--host", gw.url, *args)
        try:
            wait_for(lambda: len(sim_calls(gw.url)) >= 12, 60, "12 replayed calls")
            signalled = time.time()
            kit.signal(signal.SIGTERM)
            code = kit.wait(30)
            ended = time.time()
        finally:
            kit.kill()
        calls = sim_calls(gw.url)
    assert code == exit_codes.INTERRUPTED[signal.SIGTERM], kit.stderr[-3000:]
    assert ended - signalled < 10, "the stop-timeout is for in-flight calls: none lasts a second here"
    late = [c["ts"] - signalled for c in calls if c["ts"] > signalled + 0.05]  # 50 ms: a request in transit
    assert not late, f"requests started after the signal: {late}"
    plain = [c for c in calls if "plain:" in c["first_user"]]
    streamed = [c for c in calls if "streamed:" in c["first_user"]]
    assert plain and streamed
    assert not any(c["stream"] for c in plain) and {json.dumps(c["stream_options"]) for c in plain} == {
        "null"
    }
    assert all(c["stream"] for c in streamed)
    options = {json.dumps(c["stream_options"]) for c in streamed}
    assert options <= {"null", json.dumps(USAGE)} and "null" in options  # as recorded, none added
