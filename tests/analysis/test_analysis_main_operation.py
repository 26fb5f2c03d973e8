"""The headline latency is of the run's main operation, not its busiest: a task board polled 4 times a
task outnumbers the chat streams 2 to 1, and summary.json and the headline name the stream."""

from __future__ import annotations

import json

import pandas as pd

from analysis.headline import headline
from analysis.load import load_run
from analysis.summary_json import summary
from tests.synthetic import T0, stream_requests, write_run_dir


def _polls(tasks: int) -> pd.DataFrame:
    """A submit, then 4 polls of the same task id, per task: 50 ms each."""
    rows = []
    for i in range(tasks):
        rows.append({"operation": "task.submit", "task_id": f"t{i}"})
        rows += [{"operation": "task.poll", "task_id": f"t{i}"}] * 4
    frame = pd.DataFrame(rows)
    return frame.assign(ts=T0 + frame.index * 0.01, agent_id="a9", ok=1, status_code=200, latency_ms=50.0)


def test_the_headline_latency_is_the_streams_not_the_polls(tmp_path):
    requests = pd.concat([stream_requests(100, 60, error_rate=0), _polls(50)], ignore_index=True)
    meta = {"run_id": "r1", "profile": {"name": "smoke"}, "start_ts": T0, "end_ts": T0 + 60}
    run = load_run(write_run_dir(tmp_path, meta, requests=requests))
    doc = json.loads(json.dumps(summary(run), default=float))
    assert doc["latency"]["operation"] == "chat.stream" and doc["latency"]["latency"]["n"] == 100
    labels = [f.label for f in headline(run).figures]
    assert "p95 latency of chat.stream" in labels and "p95 latency of task.poll" not in labels


def test_without_a_stream_the_first_request_of_the_work_is_the_main_one(tmp_path):
    meta = {"run_id": "r2", "profile": {"name": "smoke"}, "start_ts": T0, "end_ts": T0 + 60}
    run = load_run(write_run_dir(tmp_path, meta, requests=_polls(20)))
    assert summary(run)["latency"]["operation"] == "task.submit"
